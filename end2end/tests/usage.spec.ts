import { test, expect } from '@playwright/test';
import { FAKE, hydrated, login } from './helpers';

// The Usage page: requests and tokens of real traffic through the gateway,
// by model and by API key, as a chart and a table; the grouping and the
// window are links, so it reads the same without JavaScript.

test('usage shows the requests and tokens of real traffic by model and by key', async ({ page }) => {
  await login(page);
  const name = `usage-${Date.now()}`;
  const made = await page.request.post('/api/providers', {
    data: { provider: 'groq', name: `${name}-conn`, apiKey: 'sk-usage', baseUrl: `${FAKE}/v1` },
  });
  expect(made.status(), await made.text()).toBe(201);
  const key = (await (await page.request.post('/api/keys', { data: { name } })).json()).key;
  for (let i = 0; i < 3; i++) {
    const resp = await page.request.post('/v1/chat/completions', {
      headers: { Authorization: `Bearer ${key}` },
      data: { model: 'groq/usage-model', messages: [{ role: 'user', content: 'count my tokens' }] },
    });
    expect(resp.status()).toBe(200);
  }
  // The request log is written behind the requests: wait until it holds all three.
  await expect
    .poll(async () => {
      const usage = await (await page.request.get('/api/usage?groupBy=model')).json();
      return usage.groups.find((g: { group: string }) => g.group === 'groq/usage-model')?.requests;
    })
    .toBe(3);
  await page.goto('/usage');
  await hydrated(page);
  const row = page.getByTestId('usage-table').locator('tr[data-group="groq/usage-model"]');
  await expect(row.locator('td').nth(1)).toHaveText('3');
  const input = Number(await row.locator('td').nth(2).textContent());
  expect(input).toBeGreaterThan(0);
  await expect(page.getByTestId('usage-chart')).toContainText('groq/usage-model');

  await page.getByRole('link', { name: 'By API key' }).click();
  await expect(page).toHaveURL(/\?by=key&window=24h$/);
  await expect(page.getByTestId('usage-table').locator('tr', { hasText: name })).toContainText('3');
  await page.getByRole('link', { name: 'Last 7 days' }).click();
  await expect(page).toHaveURL(/\?by=key&window=7d$/);
  await expect(page.getByRole('link', { name: 'Last 7 days' })).toHaveAttribute('aria-current', 'page');
  await expect(page.getByTestId('usage-table').locator('tr', { hasText: name })).toContainText('3');
});
