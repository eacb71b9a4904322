// Browser tests of the dashboard. `cargo xtask e2e` starts the gateway and
// the fake upstream and passes their URLs in OMNIROUTE_URL / FAKE_UPSTREAM_URL.
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: './tests',
  // Cold-page timings mean something on the release build only
  // (`cargo xtask e2e --release -- tests/cold.spec.ts`).
  testIgnore: process.env.OMNIROUTE_BUILD === 'release' ? [] : ['**/cold.spec.ts'],
  timeout: 60_000,
  workers: 1,
  reporter: [['list']],
  use: {
    baseURL: process.env.OMNIROUTE_URL,
    launchOptions: {
      executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', '--no-first-run'],
    },
  },
});
