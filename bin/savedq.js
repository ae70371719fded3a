#!/usr/bin/env node
// CommonJS (bin/package.json), like the launcher and the bundle it starts: see esbuild.config.mjs.
require('../dist/launch.cjs').launch();
