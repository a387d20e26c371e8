// Type-aware lint. The import rule holds the design's dependency line: only
// src/substrate/docker/ talks to the engine (dockerode), and nothing in src/ shells out to docker.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'dist-bench/**',
      'scripts/**',
      // Sample host programs the example profiles run: plain Node scripts, not cfh's code.
      'examples/**/*.mjs',
      // Module hooks that tests hand to a child node with --import: plain ES modules.
      'test/fixtures/**/*.mjs',
      '.cache/**',
      'node_modules/**',
      '.tools/**',
      'eslint.config.js',
      'bin/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      'no-console': 'error',
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/substrate/docker/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'dockerode',
              message: 'Only the Docker adapter (src/substrate/docker/) talks to the engine.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/cli/print.ts', 'bench/**/*.ts', 'test/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
  {
    // Tests read evidence documents (JSON) whose shape is what they assert; `any` there
    // reads better than a cast per field. Product code stays strict.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
    },
  },
);
