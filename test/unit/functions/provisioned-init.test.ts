/**
 * functions/shared/production-runtime.ts `composeAtProvisionedInit`: the Runtime is built during INIT only when
 * Lambda initializes the environment for provisioned concurrency, and a failed build neither fails INIT nor is kept.
 */
import { describe, expect, it } from 'vitest';
import { composeAtProvisionedInit, PROVISIONED_INITIALIZATION } from '../../../functions/shared/production-runtime.js';

describe('composeAtProvisionedInit', () => {
  it('builds the Runtime when Lambda initializes the environment for provisioned concurrency', async () => {
    let builds = 0;
    const built = await composeAtProvisionedInit({ AWS_LAMBDA_INITIALIZATION_TYPE: PROVISIONED_INITIALIZATION }, async () => {
      builds += 1;
    });
    expect(built).toBe(true);
    expect(builds).toBe(1);
  });

  it.each([['on-demand'], ['snap-start'], [undefined]])('leaves the build to the first request when the initialization type is %s', async (type) => {
    let builds = 0;
    const env = type === undefined ? {} : { AWS_LAMBDA_INITIALIZATION_TYPE: type };
    expect(
      await composeAtProvisionedInit(env, async () => {
        builds += 1;
      }),
    ).toBe(false);
    expect(builds).toBe(0);
  });

  it('resolves false instead of failing INIT when the build fails (getRuntime keeps no failed build)', async () => {
    const built = await composeAtProvisionedInit({ AWS_LAMBDA_INITIALIZATION_TYPE: PROVISIONED_INITIALIZATION }, () =>
      Promise.reject(new Error('AIP_TABLE_NAME is missing')),
    );
    expect(built).toBe(false);
  });
});
