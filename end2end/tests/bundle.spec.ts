import { test, expect } from '@playwright/test';
import { hydrated, login } from './helpers';

// The pages are lazy routes in four groups (app/src/routes.rs): a page's
// code is its group's chunk, preloaded by its HTML and fetched with it,
// and no other group's.
test("a page loads its group's wasm chunk, preloaded by its HTML, and not the other groups'", async ({ page }) => {
  const wasm: string[] = [];
  page.on('response', (r) => {
    if (r.url().endsWith('.wasm')) wasm.push(r.url());
  });
  await login(page);
  // The landing page's own chunks are still arriving when its URL shows.
  await hydrated(page);
  wasm.length = 0;
  await page.goto('/providers');
  await hydrated(page);
  // The head script compiled the page's wasm from its preloads, and the
  // chunks' loader took every module from there (app/src/hydration.rs):
  // none is left over, and none was fetched a second time.
  expect(await page.evaluate(() => [...(window as any).__compiledWasm.keys()])).toEqual([]);
  const fetched = await page.evaluate(() =>
    performance.getEntriesByType('resource').map((e) => e.name).filter((name) => name.endsWith('.wasm')),
  );
  expect(fetched.length, `each wasm file fetched once: ${fetched.join(', ')}`).toBe(new Set(fetched).size);
  expect(fetched.length).toBeGreaterThan(1);
  const own = [...new Set(wasm.filter((u) => /\/pkg\/split_setup\.wasm$/.test(u)))];
  expect(own).toHaveLength(1);
  expect(wasm.filter((u) => /\/pkg\/split_(?!setup\.)\w+\.wasm$/.test(u))).toEqual([]);
  const chunk = await page.request.get(own[0]);
  expect(chunk.status()).toBe(200);
  expect(chunk.headers()['content-type']).toBe('application/wasm');
  expect(chunk.headers()['cache-control']).toBe('public, max-age=31536000, immutable');
  const html = await (await page.request.get('/providers')).text();
  expect(html).toContain(`href="${new URL(own[0]).pathname}"`);
});
