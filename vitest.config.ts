import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          // Real engine, real containers: two cores here, so keep files serial-ish.
          testTimeout: 120_000,
          hookTimeout: 300_000,
          fileParallelism: false,
          globalSetup: ['test/integration/global-setup.ts'],
        },
      },
    ],
  },
});
