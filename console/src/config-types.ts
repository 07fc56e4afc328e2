/**
 * The shape of the console's `config.json` (no DOM, no Node: the console,
 * the local stack and the deployed console function share it).
 */
export interface DevSignIn {
  /** POST endpoint minting development tokens (the local stack's `/_local/token`). */
  readonly token_endpoint: string;
  /** Principals offered on the sign-in page. */
  readonly subjects: readonly string[];
  /** Scopes offered, with the ones checked by default. */
  readonly scopes: readonly string[];
  readonly default_scopes: readonly string[];
}

export interface OidcSignIn {
  readonly issuer: string;
  readonly client_id: string;
  readonly scopes: readonly string[];
  /** Sent as `audience` on the authorization request (Auth0 needs it for a JWT access token). */
  readonly audience?: string;
}

export interface ConsoleConfig {
  readonly mode: 'dev' | 'oidc';
  /** Absolute, or relative to the console's URL. Default `../` (the console is served at `<api>/console/`). */
  readonly api_base_url?: string;
  /** The tenant selected at first; the header offers the token's others. */
  readonly tenant?: string;
  readonly environment?: string;
  readonly dev?: DevSignIn;
  readonly oidc?: OidcSignIn;
}
