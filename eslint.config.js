// Flat config shared by every project. Type-aware rules matter most for the consumer loops:
// a floating promise in a pull loop is a lost message.
import js from "@eslint/js";
import nx from "@nx/eslint-plugin";
import prettier from "eslint-config-prettier";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "**/node_modules/**",
      "**/gen/**",
      "**/dist/**",
      "sidecar-rs/**",
      "**/*.js",
      "**/*.cjs",
      "**/*.mjs",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    files: ["**/*.ts"],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { "@nx": nx },
    rules: {
      "@nx/enforce-module-boundaries": [
        "error",
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            {
              sourceTag: "type:service",
              onlyDependOnLibsWithTags: ["type:lib", "type:proto", "type:testing"],
            },
            {
              sourceTag: "type:lib",
              onlyDependOnLibsWithTags: ["type:lib", "type:proto", "type:testing"],
            },
            { sourceTag: "type:proto", onlyDependOnLibsWithTags: [] },
            { sourceTag: "type:testing", onlyDependOnLibsWithTags: ["type:lib", "type:proto"] },
            {
              sourceTag: "type:tool",
              onlyDependOnLibsWithTags: ["type:lib", "type:proto", "type:testing"],
            },
            { sourceTag: "scope:shared", onlyDependOnLibsWithTags: ["scope:shared"] },
          ],
        },
      ],
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/restrict-template-expressions": ["error", { allowNumber: true }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      // A committed `.only` would silently skip every other test of its file.
      "no-restricted-properties": [
        "error",
        ...["it", "test", "describe", "suite", "bench"].map((object) => ({
          object,
          property: "only",
          message: "`.only` skips the rest of the file's tests; run one with `vitest -t` instead.",
        })),
      ],
    },
  },
  prettier,
);
