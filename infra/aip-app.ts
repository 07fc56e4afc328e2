/**
 * Assembles the AIP runtime's CDK app: validated configuration, cdk-nag, the
 * stateful stack and the stateless stack. infra/app.ts runs it for the CDK CLI;
 * the stack tests call it with their own App.
 */
import { isAbsolute, join, resolve } from 'node:path';
import { type App, Duration, Tags } from 'aws-cdk-lib';
import type { AwsSolutionsChecks } from 'cdk-nag';
import { aipFunctionDefinitions } from './aip-functions.js';
import { checkAttemptTimeouts } from './attempt-timeouts.js';
import { type InfraConfig, loadInfraConfig, parseInfraConfig } from './config.js';
import { checkDeploymentConnectors, withConnectorModules } from './deployment-connectors.js';
import { type FunctionDefinition, PROJECT_ROOT } from './functions.js';
import { applyNagChecks } from './nag.js';
import { StatefulStack } from './stateful-stack.js';
import { StatelessStack } from './stateless-stack.js';

/** CDK context key naming the configuration: a JSON file path (`-c config=path.json`) or, in code, an object. */
export const CONFIG_CONTEXT_KEY = 'config';
/** Used when no `config` context is given: a synth-only configuration with example.com endpoints. */
export const DEFAULT_CONFIG_FILE = join(PROJECT_ROOT, 'infra', 'config.local.json');

export interface AipAppOptions {
  /** Use this configuration instead of reading the `config` context. */
  readonly config?: InfraConfig;
  /**
   * The Lambda functions; each becomes a function in the stateless stack with
   * the trigger and grants it declares (infra/functions.ts).
   * @default aipFunctionDefinitions (infra/aip-functions.ts)
   */
  readonly functions?: readonly FunctionDefinition[] | ((config: InfraConfig) => readonly FunctionDefinition[]);
  /**
   * Code connectors handed over in code: connector ID → module path
   * (absolute, or relative to the working directory). Each is enabled (with
   * the credential rows the configuration gives it, if it lists it) and
   * bundled into the functions like a configured `connectors[].module`.
   * docs/deploying-your-connectors.md.
   */
  readonly connectorModules?: Readonly<Record<string, string>>;
}

export interface AipApp {
  readonly config: InfraConfig;
  readonly stateful: StatefulStack;
  readonly stateless: StatelessStack;
  readonly nag: AwsSolutionsChecks;
}

/** Reads the configuration named by the app's `config` context, or the default file. */
export function configFromContext(app: App): InfraConfig {
  const value: unknown = app.node.tryGetContext(CONFIG_CONTEXT_KEY);
  if (value === undefined) return loadInfraConfig(DEFAULT_CONFIG_FILE);
  if (typeof value === 'string') return loadInfraConfig(value);
  return parseInfraConfig(value, `context "${CONFIG_CONTEXT_KEY}"`);
}

/** Code connector module paths made absolute (against the working directory), so synth and bundling agree whatever their folder. */
function withAbsoluteModules(config: InfraConfig): InfraConfig {
  return { ...config, connectors: config.connectors.map((c) => (c.module !== undefined && !isAbsolute(c.module) ? { ...c, module: resolve(c.module) } : c)) };
}

export function stackNames(envName: string): { stateful: string; stateless: string } {
  return { stateful: `Aip-${envName}-Stateful`, stateless: `Aip-${envName}-Stateless` };
}

export function defineAipApp(app: App, options: AipAppOptions = {}): AipApp {
  const config = withAbsoluteModules(withConnectorModules(options.config ?? configFromContext(app), options.connectorModules));
  // The deployment's own connectors are built and their manifests checked before anything is defined.
  const manifests = checkDeploymentConnectors(config);
  const functions = typeof options.functions === 'function' ? options.functions(config) : (options.functions ?? aipFunctionDefinitions(config));
  // No connector attempt (plus its cancellation and settlement) may outlive the worker Lambda that runs it.
  checkAttemptTimeouts(config, functions, manifests);
  const nag = applyNagChecks(app);
  const names = stackNames(config.envName);

  // Both stacks are environment-agnostic (no `env`): synth never looks up an account or region.
  const stateful = new StatefulStack(app, names.stateful, {
    description: `AIP runtime (${config.envName}): transactions table, its key, work queues and DLQs`,
    envName: config.envName,
    queueEncryption: config.queueEncryption,
    workerTimeout: Duration.seconds(config.workerTimeoutSeconds),
    reconcilerTimeout: Duration.seconds(config.reconcilerTimeoutSeconds),
  });
  const stateless = new StatelessStack(app, names.stateless, {
    description: `AIP runtime (${config.envName}): API, functions, schedule group, alarms`,
    config,
    stateful,
    functions,
  });
  stateless.addStackDependency(stateful);

  Tags.of(app).add('project', 'aip-runtime');
  Tags.of(app).add('aip:env', config.envName);
  return { config, stateful, stateless, nag };
}
