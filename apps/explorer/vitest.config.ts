import { sharedVitestConfig } from '../../vitest.shared.js';

// Unit tests of the explorer's pure modules (request building, metric parsing); the browser test that
// drives the whole page against a real server is apps/cli/test/explorer.test.ts.
export default sharedVitestConfig();
