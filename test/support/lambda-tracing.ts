/**
 * A Lambda execution environment with X-Ray active tracing, as far as the
 * Powertools Tracer and the X-Ray SDK read it, for the tests of the tracer
 * loaded on demand (functions/shared/observability-base.ts). Run in an
 * isolated test file only: loading the tracer patches node:http and
 * node:https for the whole process.
 *
 * - {@link startXrayDaemon}: a UDP socket on loopback standing in for the X-Ray
 *   daemon; the SDK sends it every closed (sub)segment of a sampled invocation.
 * - {@link stubLambdaTracingEnv}: the environment (restore it with
 *   `vi.unstubAllEnvs()`).
 * - {@link stubTraceHeader}: `_X_AMZN_TRACE_ID` for the next invocation, as
 *   Lambda sets it per invocation.
 * - {@link xraySdkLoaded}: whether anything has imported the X-Ray SDK
 *   (CommonJS, so it shows in Node's CommonJS module registry).
 */
import { createSocket } from 'node:dgram';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { sep } from 'node:path';
import type { Context } from 'aws-lambda';
import { vi } from 'vitest';

export interface XrayDocument {
  readonly name: string;
  readonly trace_id: string;
  readonly annotations?: Record<string, unknown>;
}

export interface XrayDaemon {
  /** `host:port`, for AWS_XRAY_DAEMON_ADDRESS. */
  readonly address: string;
  /** Every document received so far. */
  readonly documents: readonly XrayDocument[];
  close(): void;
}

export async function startXrayDaemon(): Promise<XrayDaemon> {
  const socket = createSocket('udp4');
  const documents: XrayDocument[] = [];
  socket.on('message', (message) => {
    // Each datagram is a header line, then one segment document.
    const [, body] = message.toString('utf8').split('\n');
    if (body !== undefined) documents.push(JSON.parse(body) as XrayDocument);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { address: `127.0.0.1:${(socket.address() as AddressInfo).port}`, documents, close: () => socket.close() };
}

/** Lambda's variables and active tracing on (POWERTOOLS_TRACE_ENABLED=true), the handler `index.handler`, the service `aip-test`. */
export function stubLambdaTracingEnv(daemon: XrayDaemon): void {
  vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'aip-test');
  vi.stubEnv('AWS_EXECUTION_ENV', 'AWS_Lambda_nodejs22.x');
  vi.stubEnv('AWS_LAMBDA_INITIALIZATION_TYPE', 'on-demand');
  vi.stubEnv('LAMBDA_TASK_ROOT', '/var/task');
  vi.stubEnv('_HANDLER', 'index.handler');
  vi.stubEnv('AWS_XRAY_DAEMON_ADDRESS', daemon.address);
  vi.stubEnv('AWS_XRAY_CONTEXT_MISSING', 'IGNORE_ERROR');
  vi.stubEnv('POWERTOOLS_SERVICE_NAME', 'aip-test');
  vi.stubEnv('POWERTOOLS_METRICS_NAMESPACE', 'AIP/test');
  vi.stubEnv('POWERTOOLS_TRACE_ENABLED', 'true');
}

let invocations = 0;

/** Sets a new trace header for the next invocation, sampled or not, and returns its root (the trace ID). */
export function stubTraceHeader(sampled: boolean): string {
  invocations++;
  const root = `1-6930a000-${invocations.toString(16).padStart(24, '0')}`;
  vi.stubEnv('_X_AMZN_TRACE_ID', `Root=${root};Parent=${invocations.toString(16).padStart(16, '0')};Sampled=${sampled ? 1 : 0}`);
  return root;
}

const cjsModules = createRequire(import.meta.url).cache;

export function xraySdkLoaded(): boolean {
  return Object.keys(cjsModules).some((file) => file.includes(`${sep}aws-xray-sdk-core${sep}`));
}

export const LAMBDA_CONTEXT = {
  functionName: 'aip-test',
  awsRequestId: 'req-1',
  invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:aip-test',
  getRemainingTimeInMillis: () => 30_000,
} as unknown as Context;
