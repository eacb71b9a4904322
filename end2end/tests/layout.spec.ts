import { test, expect, Page } from '@playwright/test';
import { FAKE, LANDING, ADMIN_PASSWORD, PAGES, hydrated, login } from './helpers';

const SHOTS = process.env.SCREENSHOT_DIR ?? 'test-results/screenshots';

async function noHorizontalScroll(page: Page, path: string) {
  const sizes = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    client: document.documentElement.clientWidth,
  }));
  expect(sizes.scroll, `${path} scrolls sideways`).toBeLessThanOrEqual(sizes.client);
}

test('every page has its own title, a skip link, the favicon and the current page marked', async ({ page }) => {
  const failed: string[] = [];
  page.on('response', (r) => {
    if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
  });
  await login(page);
  const titles = new Set<string>();
  for (const [path, heading] of PAGES) {
    await page.goto(path);
    await expect(page.getByRole('heading', { level: 1 })).toHaveText(heading);
    titles.add(await page.title());
    const current = page.locator('nav[aria-label=Main] a[aria-current=page]');
    await expect(current).toHaveCount(1);
    await expect(current).toHaveAttribute('href', path);
    // The highlight is visible, not only announced.
    const other = page.locator('nav[aria-label=Main] a:not([aria-current])').first();
    const [on, off] = await Promise.all([
      current.evaluate((e) => getComputedStyle(e).backgroundColor),
      other.evaluate((e) => getComputedStyle(e).backgroundColor),
    ]);
    expect(on).not.toEqual(off);
    await page.keyboard.press('Tab');
    await expect(page.getByRole('link', { name: 'Skip to content' })).toBeFocused();
  }
  expect(titles.size).toBe(PAGES.length);
  expect([...titles].every((t) => t.endsWith('· OmniRoute'))).toBe(true);
  for (const icon of ['/favicon.svg', '/favicon.ico']) {
    const answer = await page.request.get(icon, { maxRedirects: 0 });
    expect(answer.status(), icon).toBe(200);
    expect(answer.headers()['content-type'], icon).toBe('image/svg+xml');
  }
  expect(failed).toEqual([]);
});

test('an unknown dashboard address is a 404 page in the layout', async ({ page }) => {
  await login(page);
  const resp = await page.goto('/no/such/page');
  expect(resp?.status()).toBe(404);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Page not found');
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeAttached();
  await expect(page).toHaveTitle('Page not found · OmniRoute');
});

test.describe('at 390 px', () => {
  test.use({ viewport: { width: 390, height: 844 } });

  test('the navigation folds behind Menu and no page scrolls sideways', async ({ page }) => {
    await login(page);
    for (const [path] of PAGES) {
      await page.goto(path);
      await hydrated(page);
      await noHorizontalScroll(page, path);
      await page.screenshot({ path: `${SHOTS}/390${path.replaceAll('/', '_')}.png`, fullPage: true });
    }
    const nav = page.getByRole('navigation', { name: 'Main' });
    await expect(nav).toBeHidden();
    await page.getByText('Menu', { exact: true }).click();
    await expect(nav).toBeVisible();
    await nav.getByRole('link', { name: 'Providers' }).click();
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Providers');
    await expect(nav).toBeHidden();
  });

  test.describe('without JavaScript', () => {
    test.use({ javaScriptEnabled: false });

    test('the Menu button still opens the navigation', async ({ page }) => {
      await page.goto('/login');
      await noHorizontalScroll(page, '/login');
      await page.getByLabel('Admin password').fill(ADMIN_PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect(page).toHaveURL(LANDING);
      const nav = page.getByRole('navigation', { name: 'Main' });
      await expect(nav).toBeHidden();
      await page.getByText('Menu', { exact: true }).click();
      await expect(nav).toBeVisible();
      await nav.getByRole('link', { name: 'Combos' }).click();
      await expect(page.getByRole('heading', { level: 1 })).toHaveText('Combos');
    });
  });
});

test.describe('dark mode', () => {
  test.use({ colorScheme: 'dark' });

  test('follows the system setting', async ({ page }) => {
    await login(page);
    for (const [path] of PAGES) {
      await page.goto(path);
      await page.screenshot({ path: `${SHOTS}/dark${path.replaceAll('/', '_')}.png`, fullPage: true });
    }
    const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(background).toBe('rgb(15, 23, 42)');
    const card = page.locator('.bg-white').first();
    await expect(card).toBeVisible();
    expect(await card.evaluate((e) => getComputedStyle(e).backgroundColor)).not.toBe('rgb(255, 255, 255)');
  });
});

test('light pages at 1280 px', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await login(page);
  for (const [path] of PAGES) {
    await page.goto(path);
    await noHorizontalScroll(page, path);
    await page.screenshot({ path: `${SHOTS}/1280${path.replaceAll('/', '_')}.png`, fullPage: true });
  }
});

test('a folded section shows that it opens, and a name in a table stays on one line', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await login(page);
  const created = await page.request.post('/api/providers', {
    data: { provider: 'deepseek', name: 'e2e-a-long-hyphenated-name', apiKey: 'sk-layout-0000', baseUrl: `${FAKE}/v1` },
  });
  expect(created.status(), await created.text()).toBe(201);
  await page.goto('/providers');
  await hydrated(page);
  const catalog = page.getByTestId('catalog').locator('summary');
  const marker = () => catalog.evaluate((summary) => getComputedStyle(summary, '::before').content);
  expect(await marker()).toBe('"▸"');
  await catalog.click();
  expect(await marker()).toBe('"▾"');
  const name = page.locator('tr', { hasText: 'e2e-a-long-hyphenated-name' }).getByTestId('name');
  const lines = await name.evaluate((cell) => {
    const text = document.createRange();
    text.selectNodeContents(cell);
    return text.getClientRects().length;
  });
  expect(lines, 'the name breaks at its hyphens').toBe(1);
  const id = (await created.json()).connection.id;
  expect((await page.request.delete(`/api/providers/${id}`, { data: {} })).status()).toBe(200);
});
