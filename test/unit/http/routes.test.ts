import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createHttpHandlers } from '../../../functions/http/index.js';
import { matchRoute, ROUTE_LIST, ROUTES, SCOPES } from '../../../lib/http/routes.js';
import { parseRuntimeSettingsInput } from '../../../lib/runtime/config.js';
import { deps, stubRuntime } from './support.js';

const ROOT = resolve(import.meta.dirname, '../../..');

describe('route table', () => {
  it('has unique IDs, unique method+path pairs and keys equal to IDs', () => {
    expect(new Set(ROUTE_LIST.map((r) => r.id)).size).toBe(ROUTE_LIST.length);
    expect(new Set(ROUTE_LIST.map((r) => `${r.method} ${r.path}`)).size).toBe(ROUTE_LIST.length);
    for (const [key, r] of Object.entries(ROUTES)) expect(r.id).toBe(key);
  });

  it('names, for every route, a module that exports a handler function under that name', async () => {
    for (const r of ROUTE_LIST) {
      const mod = (await import(pathToFileURL(resolve(ROOT, r.handler.module)).href)) as Record<string, unknown>;
      expect(typeof mod[r.handler.export], `${r.handler.module}#${r.handler.export}`).toBe('function');
    }
  });

  it('requires on the operator routes the scope the runtime grants the operator views by default', () => {
    expect(SCOPES.operator).toBe('aip:operator');
    expect(parseRuntimeSettingsInput({}).operator_scope).toBe(SCOPES.operator);
    expect(parseRuntimeSettingsInput({}, 'test').operator_scope).toBe(SCOPES.operator);
    expect(ROUTES.listOperator.scopes).toEqual([SCOPES.operator]);
  });

  it('has a handler for every route in createHttpHandlers', () => {
    const handlers = createHttpHandlers(deps(stubRuntime()));
    expect(Object.keys(handlers).sort()).toEqual(Object.keys(ROUTES).sort());
  });

  it('keeps timeouts inside API Gateway’s 29 s and documents every route as public only deliberately', () => {
    for (const r of ROUTE_LIST) {
      expect(r.timeoutSeconds).toBeGreaterThan(0);
      expect(r.timeoutSeconds).toBeLessThanOrEqual(29);
    }
    expect(ROUTE_LIST.filter((r) => r.auth === 'none').map((r) => r.id)).toEqual(['getOpenApi']);
  });
});

describe('matchRoute', () => {
  it('matches static and parameterised paths and decodes parameters', () => {
    expect(matchRoute('POST', '/v1/actions')).toMatchObject({ route: { id: 'submitAction' }, pathParameters: null });
    expect(matchRoute('GET', '/v1/actions/act-1')).toMatchObject({ route: { id: 'getAction' }, pathParameters: { id: 'act-1' } });
    expect(matchRoute('GET', '/v1/actions/a%2Fb%3Ac/stream')).toMatchObject({ route: { id: 'streamAction' }, pathParameters: { id: 'a/b:c' } });
    expect(matchRoute('POST', '/v1/approvals/ap-1/decision')).toMatchObject({ route: { id: 'decideApproval' }, pathParameters: { id: 'ap-1' } });
  });

  it('tells a wrong method from an unknown path', () => {
    expect(matchRoute('DELETE', '/v1/actions/act-1')).toEqual({ allowed: ['GET'] });
    expect(matchRoute('GET', '/v1/actions')).toEqual({ allowed: ['POST'] });
    expect(matchRoute('GET', '/v1/nothing')).toBeUndefined();
    expect(matchRoute('GET', '/v1/actions/')).toBeUndefined();
    expect(matchRoute('GET', '/v1/actions/a/b')).toBeUndefined();
  });

  it('keeps an undecodable parameter as sent (validation then refuses it)', () => {
    expect(matchRoute('GET', '/v1/actions/%E0%A4%A')).toMatchObject({ pathParameters: { id: '%E0%A4%A' } });
  });
});
