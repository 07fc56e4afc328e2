/**
 * What a platform team's own CDK app imports from this project
 * (`aip-runtime/infra`; docs/deploying-your-connectors.md): the app
 * definition, the configuration loader, and the types of a code connector
 * module. The CDK entrypoint of this repository (./app.ts) is the same
 * `defineAipApp` with no options.
 */
export { type AipApp, type AipAppOptions, CONFIG_CONTEXT_KEY, defineAipApp, stackNames } from './aip-app.js';
export { type InfraConfig, type InfraConfigInput, InfraConfigError, loadInfraConfig, parseInfraConfig } from './config.js';
export type { ConnectorFactoryOptions, ConnectorModuleFactory } from '../functions/shared/connector-factories.js';
