// `make lint` (with knip and madge): typescript-eslint's recommended rules, not type-aware
// (the type-checked set took too long on the 2-core machine; `make typecheck` runs tsc), no
// stylistic rules, and the layering of src/ as import rules.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Layering (README "Layout"): the domain core imports no transport, and the REST API and
 * the context service never import each other. no-restricted-imports sees the import as
 * written, so each rule is spelled for the depth of the importing file: from
 * src/core/<a>/<b>.ts, `../../api/x.js` is src/api, while `../context/x.js` is core's own
 * src/core/context.
 */
const LAYERS = [
  {
    dir: 'src/core',
    forbidden: ['api', 'context', 'rules', 'telemetry', 'collector', 'launcher', 'shared/http[^/]*'],
    why: 'src/core is the domain: it imports no transport (src/api, src/context, src/rules, src/telemetry, src/collector, src/shared/http*, src/launcher)',
  },
  { dir: 'src/api', forbidden: ['context'], why: 'src/api and src/context do not import each other: shared code lives in src/core' },
  { dir: 'src/context', forbidden: ['api'], why: 'src/api and src/context do not import each other: shared code lives in src/core' },
];

const layerRules = LAYERS.flatMap(({ dir, forbidden, why }) =>
  [1, 2, 3, 4, 5].map((depth) => ({
    // depth = how many `../` lead from the importing file to src/.
    files: [`${dir}/${'*/'.repeat(depth - 1)}*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^(\\.\\./){${depth}}(${forbidden.join('|')})(/|\\.js$)`,
              message: why,
            },
          ],
        },
      ],
    },
  })),
);

export default tseslint.config(
  { ignores: ['gen/**', 'dist/**', 'clients/ts/src/gen/**', 'clients/ts/dist/**', '**/node_modules/**', '.svc-data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly' },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // `_`-prefixed names are deliberately unused (positional parameters, skipped elements).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
    },
  },
  {
    // Tests, benchmarks and their helpers read arbitrary JSON answers: `any` is what they
    // assert on, field by field. Product code keeps the rule.
    files: ['test/**', 'bench/**', '**/*.test.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The console's browser scripts (plain scripts, no bundler): the browser's globals.
    files: ['src/console/assets/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: { window: 'readonly', document: 'readonly', HTMLFormElement: 'readonly', crypto: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', atob: 'readonly', btoa: 'readonly' },
    },
  },
  ...layerRules,
);
