/** Sign-in: development tokens on the local stack, OIDC (authorization code + PKCE) when deployed. */
import { useState } from 'preact/hooks';
import { devSignIn, startOidcSignIn, type Session } from '../auth.js';
import type { ConsoleConfig } from '../config.js';

export function SignInPage({ config, onSignedIn }: { config: ConsoleConfig; onSignedIn: (s: Session) => void }) {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const dev = config.mode === 'dev' ? config.dev : undefined;
  const [subject, setSubject] = useState(dev?.subjects[0] ?? 'dev-operator');
  const [scopes, setScopes] = useState<string[]>([...(dev?.default_scopes ?? [])]);

  const run = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await fn();
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="signin">
      <h1>AIP operator console</h1>
      {config.environment && <p class="env">{config.environment}</p>}
      {dev && (
        <form
          class="card"
          aria-label="Development sign-in"
          onSubmit={(e) => {
            e.preventDefault();
            void run(async () => onSignedIn(await devSignIn(config, subject, scopes)));
          }}
        >
          <h2>Development sign-in</h2>
          <p class="muted">The local stack mints a development token (tenant {config.tenant ?? 'demo'}). Never offered by a deployment.</p>
          <label>
            Principal
            <input name="subject" list="subjects" value={subject} onInput={(e) => setSubject((e.target as HTMLInputElement).value)} required />
            <datalist id="subjects">
              {dev.subjects.map((s) => (
                <option value={s} key={s} />
              ))}
            </datalist>
          </label>
          <fieldset>
            <legend>Scopes</legend>
            {dev.scopes.map((s) => (
              <label class="check" key={s}>
                <input
                  type="checkbox"
                  name="scope"
                  value={s}
                  checked={scopes.includes(s)}
                  onChange={(e) => setScopes((cur) => ((e.target as HTMLInputElement).checked ? [...cur, s] : cur.filter((x) => x !== s)))}
                />{' '}
                {s}
              </label>
            ))}
          </fieldset>
          <button type="submit" class="primary" disabled={busy}>
            Sign in (development)
          </button>
        </form>
      )}
      {config.mode === 'oidc' && config.oidc && (
        <div class="card">
          <h2>Sign in</h2>
          <p class="muted">With your organisation's identity provider ({new URL(config.oidc.issuer).host}).</p>
          <button type="button" class="primary" disabled={busy} onClick={() => void run(() => startOidcSignIn(config))}>
            Sign in with single sign-on
          </button>
        </div>
      )}
      {error && (
        <p class="problem" role="alert">
          {error}
        </p>
      )}
    </main>
  );
}
