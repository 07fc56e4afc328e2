/**
 * The operator console: sign-in, the work lists, the transaction, action
 * pages. Routes live in the URL fragment (`#/work/outcome_unknown`,
 * `#/transactions/<id>`, `#/actions/<id>`), so the static files need no
 * server-side routing and the OIDC redirect URI is the console's own URL.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { apiBase, loadConfig, type ConsoleConfig } from './config.js';
import { clearSession, completeOidcSignIn, isOidcCallback, loadSession, type Session } from './auth.js';
import { ConsoleApi, OPERATOR_VIEWS, type OperatorView } from './api.js';
import { SignInPage } from './pages/signin.js';
import { WorkPage } from './pages/work.js';
import { TransactionPage } from './pages/transaction.js';
import { ActionPage } from './pages/action.js';
import type { Ctx } from './ctx.js';

type Route = { page: 'work'; view: OperatorView } | { page: 'transaction'; id: string } | { page: 'action'; id: string };

/** Short names people type or link to (`#/work/approvals`), for the views' own names. */
const VIEW_ALIASES: Readonly<Record<string, OperatorView>> = {
  approvals: 'pending_approvals',
  stalled: 'stalled_committing',
  escalated: 'requires_human',
};

function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/');
  const id = parts.slice(1).join('/');
  if (parts[0] === 'transactions' && id) return { page: 'transaction', id: decodeURIComponent(id) };
  if (parts[0] === 'actions' && id) return { page: 'action', id: decodeURIComponent(id) };
  const named = VIEW_ALIASES[parts[1] ?? ''] ?? parts[1] ?? '';
  const view = (OPERATOR_VIEWS as readonly string[]).includes(named) ? (named as OperatorView) : 'outcome_unknown';
  return { page: 'work', view };
}

function useHash(): string {
  const [hash, setHash] = useState(window.location.hash);
  useEffect(() => {
    const on = () => setHash(window.location.hash);
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return hash;
}

const TENANT_KEY = 'aip-console.tenant';

export function App() {
  const [config, setConfig] = useState<ConsoleConfig>();
  const [session, setSession] = useState<Session | undefined>(() => loadSession());
  const [fatal, setFatal] = useState<string>();
  const [tenant, setTenant] = useState<string | undefined>(() => sessionStorage.getItem(TENANT_KEY) ?? undefined);
  const hash = useHash();

  useEffect(() => {
    loadConfig()
      .then(async (c) => {
        setConfig(c);
        if (c.mode === 'oidc' && isOidcCallback()) setSession(await completeOidcSignIn(c));
      })
      .catch((err: unknown) => setFatal(err instanceof Error ? err.message : String(err)));
  }, []);

  const signOut = () => {
    clearSession();
    sessionStorage.removeItem(TENANT_KEY);
    setTenant(undefined);
    setSession(undefined);
  };

  // The tenant: the one chosen in this tab, else the configured one, else the token's first.
  const effectiveTenant = session
    ? (tenant ??
      (config?.tenant !== undefined && (session.tenants.length === 0 || session.tenants.includes(config.tenant)) ? config.tenant : session.tenants[0]))
    : undefined;
  const api = useMemo(
    () =>
      config
        ? new ConsoleApi({ baseUrl: apiBase(config), token: () => loadSession()?.access_token, tenant: () => effectiveTenant, onUnauthenticated: signOut })
        : undefined,
    [config, effectiveTenant],
  );

  if (fatal)
    return (
      <main class="fatal">
        <p role="alert">The console could not start: {fatal}</p>
      </main>
    );
  if (!config || !api) return <main class="loading">Loading…</main>;
  if (!session) return <SignInPage config={config} onSignedIn={setSession} />;

  const route = parseRoute(hash);
  const ctx: Ctx = { config, api, session, tenant: effectiveTenant };
  const tenants = [...new Set([...(effectiveTenant ? [effectiveTenant] : []), ...session.tenants])];
  return (
    <div class="shell">
      <header class="top">
        <a class="brand" href="#/work/outcome_unknown">
          AIP operator console
        </a>
        {config.environment && <span class="env">{config.environment}</span>}
        <nav>
          <a href="#/work/outcome_unknown" aria-current={route.page === 'work' ? 'page' : undefined}>
            Stuck work
          </a>
        </nav>
        <GoTo />
        <label class="tenant">
          Tenant{' '}
          <select
            value={effectiveTenant ?? ''}
            onChange={(e) => {
              const v = (e.target as HTMLSelectElement).value;
              sessionStorage.setItem(TENANT_KEY, v);
              setTenant(v);
            }}
          >
            {tenants.map((t) => (
              <option value={t} key={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <span class="who" data-testid="signed-in-as" title={session.scopes.join(' ')}>
          {session.subject}
        </span>
        <button type="button" class="link" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main>
        {route.page === 'work' && <WorkPage ctx={ctx} view={route.view} key={`${route.view}/${effectiveTenant}`} />}
        {route.page === 'transaction' && <TransactionPage ctx={ctx} id={route.id} key={route.id} />}
        {route.page === 'action' && <ActionPage ctx={ctx} id={route.id} key={route.id} />}
      </main>
    </div>
  );
}

/** Jump to a transaction or an action by ID. */
function GoTo() {
  const [id, setId] = useState('');
  const [kind, setKind] = useState<'transactions' | 'actions'>('transactions');
  return (
    // biome-ignore lint/a11y/useSemanticElements: a search landmark on the form itself (the ARIA pattern); wrapping it in the newer <search> element would change the layout the console's CSS and tests rely on
    <form
      class="goto"
      role="search"
      onSubmit={(e) => {
        e.preventDefault();
        if (id.trim()) window.location.hash = `#/${kind}/${encodeURIComponent(id.trim())}`;
      }}
    >
      <select aria-label="ID kind" value={kind} onChange={(e) => setKind((e.target as HTMLSelectElement).value as 'transactions' | 'actions')}>
        <option value="transactions">transaction</option>
        <option value="actions">action</option>
      </select>
      <input aria-label="ID" placeholder="ID" value={id} onInput={(e) => setId((e.target as HTMLInputElement).value)} />
      <button type="submit">Open</button>
    </form>
  );
}
