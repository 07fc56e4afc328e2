/**
 * Moved to lib/connectors/ports/credentials.ts (the connector SDK's port).
 * This re-export remains only for the function composition modules still
 * importing the old path; remove it once they import the new one.
 * @deprecated import from lib/connectors/ports/credentials.ts
 */
export type { CredentialProvider, CredentialResolutionScope } from '../connectors/ports/credentials.js';
