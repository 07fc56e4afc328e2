/**
 * DynamoDB Local on a machine without Java: the error names the missing Java
 * and the command that installs it, before anything is spawned. The lookup is
 * injected (nothing is uninstalled).
 */
import { describe, expect, it } from 'vitest';
import { findJava, JAVA_INSTALL_COMMAND, JavaMissingError, startDynamoDbLocal } from '../../../dev/emulators/dynamodb-local.js';

describe('DynamoDB Local without Java', () => {
  it('refuses to start, naming Java 17 and the command that installs it', async () => {
    const started = startDynamoDbLocal({ findJava: () => undefined });
    await expect(started).rejects.toBeInstanceOf(JavaMissingError);
    await expect(started).rejects.toThrow(/needs Java 17/);
    await expect(started).rejects.toThrow(`sudo ${JAVA_INSTALL_COMMAND}`);
    expect(JAVA_INSTALL_COMMAND).toBe('apt-get install -y openjdk-17-jre-headless');
  });
});

describe('DynamoDB Local whose Java exits during start', () => {
  it('names the exit and what the process wrote to stderr', async () => {
    // Node stands in for a Java that refuses its arguments: it exits at once, saying why on stderr.
    const started = startDynamoDbLocal({ findJava: () => process.execPath });
    await expect(started).rejects.toThrow(/DynamoDB Local exited during start: .* exited with code \d+: .*bad option/);
  });
});

describe('findJava', () => {
  const only =
    (...present: string[]) =>
    (path: string) =>
      present.includes(path);

  it('prefers JAVA_HOME/bin/java, then the first java on PATH', () => {
    const env = { JAVA_HOME: '/opt/jdk', PATH: '/usr/local/bin:/usr/bin' };
    expect(findJava(env, only('/opt/jdk/bin/java', '/usr/bin/java'))).toBe('/opt/jdk/bin/java');
    expect(findJava(env, only('/usr/local/bin/java', '/usr/bin/java'))).toBe('/usr/local/bin/java');
    expect(findJava({ PATH: '/usr/local/bin:/usr/bin' }, only('/usr/bin/java'))).toBe('/usr/bin/java');
  });

  it('finds nothing when neither JAVA_HOME nor PATH holds one', () => {
    expect(findJava({ JAVA_HOME: '/opt/jdk', PATH: '/usr/bin:/bin' }, only())).toBeUndefined();
    expect(findJava({}, only('/usr/bin/java'))).toBeUndefined();
  });
});
