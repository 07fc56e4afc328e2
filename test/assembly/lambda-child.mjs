/**
 * One Lambda execution environment of the assembly test (test/assembly/lambda-host.ts
 * forks it, with the function's environment and LAMBDA_TASK_ROOT = its
 * staged bundle): it loads the handler module as Lambda's Node.js runtime
 * does (`_HANDLER` = `index.handler` → `index.mjs`, export `handler`), then
 * runs one invocation at a time from IPC messages, each with a Lambda-like
 * context and trace header, and answers with the result or the error.
 * Plain JavaScript: it runs in the bundle's own Node process, without tsx.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = process.env.LAMBDA_TASK_ROOT;
const [moduleName, exportName] = process.env._HANDLER.split('.');

function errorOf(err) {
  return err instanceof Error ? { errorType: err.name, errorMessage: err.message, stack: err.stack } : { errorType: 'Error', errorMessage: String(err) };
}

let handler;
try {
  const file = ['.mjs', '.js', '.cjs'].map((ext) => join(root, `${moduleName}${ext}`)).find((f) => existsSync(f));
  if (file === undefined) throw new Error(`Runtime.ImportModuleError: Cannot find module '${moduleName}' in ${root}`);
  const mod = await import(pathToFileURL(file).href);
  handler = mod[exportName];
  if (typeof handler !== 'function') throw new Error(`Runtime.HandlerNotFound: ${process.env._HANDLER} is undefined or not exported`);
  process.send({ type: 'ready' });
} catch (err) {
  process.send({ type: 'init_error', error: errorOf(err) });
}

process.on('message', async (message) => {
  if (message.type !== 'invoke') return;
  const requestId = randomUUID();
  const deadline = Date.now() + message.timeoutMs;
  process.env._X_AMZN_TRACE_ID = `Root=1-${Math.floor(Date.now() / 1000).toString(16)}-${randomUUID().replaceAll('-', '').slice(0, 24)};Parent=${randomUUID().replaceAll('-', '').slice(0, 16)};Sampled=0;Lineage=1:0:0`;
  const context = {
    functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: process.env.AWS_LAMBDA_FUNCTION_VERSION,
    invokedFunctionArn: message.functionArn,
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    awsRequestId: requestId,
    logGroupName: process.env.AWS_LAMBDA_LOG_GROUP_NAME,
    logStreamName: process.env.AWS_LAMBDA_LOG_STREAM_NAME,
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    succeed: () => undefined,
    fail: () => undefined,
  };
  try {
    const value = await handler(message.event, context);
    process.send({ type: 'result', id: message.id, ok: true, value: value === undefined ? null : value });
  } catch (err) {
    process.send({ type: 'result', id: message.id, ok: false, error: errorOf(err) });
  }
});
