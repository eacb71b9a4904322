import { test, expect, Page, request as requests } from '@playwright/test';
import { FAKE, hydrated, login } from './helpers';

async function addConnection(page: Page, provider: string, name: string) {
  const resp = await page.request.post('/api/providers', {
    data: { provider, name, apiKey: `sk-${name}-0000000000`, baseUrl: `${FAKE}/v1` },
  });
  expect(resp.status(), await resp.text()).toBe(201);
  return (await resp.json()).connection.id as string;
}

test('Providers edits Max concurrent and per-model limits, refusing a bad line as it is typed', async ({ page }) => {
  await login(page);
  const id = await addConnection(page, 'groq', 'groq-limited');
  await page.goto('/providers');
  await hydrated(page);
  const row = page.locator(`[data-connection-id="${id}"]`);
  await expect(row.getByTestId('load')).toHaveText('unlimited');
  await row.getByText('Edit', { exact: true }).click();
  await row.getByLabel('Max concurrent (empty = unlimited)').fill('1');
  const caps = row.getByLabel('Per-model limits (one model=limit per line)');
  await caps.fill('llama-3.3-70b=2\nkimi-k2');
  await expect(row.locator('[data-field-error="modelConcurrency"]')).toHaveText(
    'line 2: write model=limit, e.g. glm-5=1',
  );
  await expect(caps).toHaveAttribute('aria-invalid', 'true');
  await caps.fill('llama-3.3-70b=2\nkimi-k2=1');
  await expect(row.locator('[data-field-error]')).toHaveCount(0);
  await row.getByRole('button', { name: 'Save' }).click();
  await expect(page.locator(`[data-connection-id="${id}"] [data-testid="load"]`)).toHaveText('0 of 1 in flight');
  const saved = (await (await page.request.get(`/api/providers/${id}`)).json()).connection;
  expect(saved.maxConcurrent).toBe(1);
  expect(saved.rateLimitOverrides.modelConcurrency).toEqual({ 'kimi-k2': 1, 'llama-3.3-70b': 2 });
  // The server applies the same rule to a save that skipped the browser check.
  const refused = await page.request.post('/sfn/update_connection', {
    form: { id, model_concurrency: 'kimi-k2=0' },
  });
  expect(refused.status()).toBe(400);
  expect(await refused.text()).toContain('Per-model limits: line 1: the limit of kimi-k2 must be a whole number');
});

test('Health shows requests waiting at a connection limit while they wait', async ({ page }) => {
  await login(page);
  const id = await addConnection(page, 'minimax', 'minimax-one');
  const put = await page.request.put(`/api/providers/${id}`, { data: { maxConcurrent: 1 } });
  expect(put.status()).toBe(200);
  // Long enough that the page's refresh (every 5 s) must see the wait.
  const rule = await page.request.post(`${FAKE}/_control/rules`, { data: { model: 'MiniMax-M2', latencyMs: 12_000 } });
  expect(rule.ok()).toBeTruthy();
  const key = (await (await page.request.post('/api/keys', { data: { name: `limits-${Date.now()}` } })).json()).key;
  await page.goto('/monitoring/health');
  await hydrated(page);
  // Two clients of their own, each on its own connection: one runs, one waits.
  const clients = await Promise.all([0, 1].map(() => requests.newContext({ baseURL: process.env.OMNIROUTE_URL })));
  const calls = clients.map((client) =>
    client.post('/v1/chat/completions', {
      headers: { Authorization: `Bearer ${key}` },
      data: { model: 'minimax/MiniMax-M2', messages: [{ role: 'user', content: 'hi' }] },
      timeout: 40_000,
    }),
  );
  const queue = page.locator(`[data-queue="qsconn:${id}"]`);
  await expect(queue.locator('[data-queued]')).toHaveText('1', { timeout: 11_000 });
  await expect(queue.locator('[data-running]')).toHaveText('1 of 1 in flight');
  await expect(queue).toContainText('minimax-one (minimax)');
  for (const r of await Promise.all(calls)) {
    expect(r.status()).toBe(200);
  }
  await Promise.all(clients.map((c) => c.dispose()));
  // The page follows: nothing waits any more.
  await expect(queue.locator('[data-queued]')).toHaveText('0', { timeout: 11_000 });
});

test('Providers switches rate-limit protection; Health lists a protected connection\'s request queue', async ({
  page,
}) => {
  await login(page);
  const id = await addConnection(page, 'openrouter', 'openrouter-protected');
  await page.goto('/providers');
  await hydrated(page);
  const row = page.locator(`[data-connection-id="${id}"]`);
  // The e2e gateway runs with RATE_LIMIT_AUTO_ENABLE=true: API-key connections are protected.
  // …paced as its queue paces it.
  await expect(row.getByTestId('protection')).toHaveText(
    /^on \(automatic\) · ≤ \d+\/min · \d+ ms apart · \d+ at once · 0 waiting · 0 started$/,
  );
  const choose = async (mode: string) => {
    // The edit panel stays open after a save.
    if (!(await row.getByTestId('edit').evaluate((d) => d.hasAttribute('data-open')))) {
      await row.getByText('Edit', { exact: true }).click();
    }
    await row.getByLabel('Rate-limit protection').selectOption(mode);
    await row.getByRole('button', { name: 'Save' }).click();
  };
  await choose('off');
  await expect(row.getByTestId('protection')).toHaveText('off');
  const stored = async () =>
    (await (await page.request.get('/api/rate-limits')).json()).connections.find(
      (c: { connectionId: string }) => c.connectionId === id,
    );
  expect((await stored()).rateLimitProtection).toBe(false);
  await choose('on');
  await expect(row.getByTestId('protection')).toHaveText(/^on · ≤ \d+\/min · .* · 0 waiting · 0 started$/);
  expect((await stored()).rateLimitProtection).toBe(true);
  const key = (await (await page.request.post('/api/keys', { data: { name: `queue-${Date.now()}` } })).json()).key;
  const served = await page.request.post('/v1/chat/completions', {
    headers: { Authorization: `Bearer ${key}` },
    data: { model: 'openrouter/openrouter/auto', messages: [{ role: 'user', content: 'hi' }] },
  });
  expect(served.status(), await served.text()).toBe(200);
  await page.goto('/monitoring/health');
  await hydrated(page);
  const queue = page.locator(`[data-queue="openrouter:${id}"]`);
  await expect(queue).toHaveAttribute('data-kind', 'rate_limit', { timeout: 11_000 });
  await expect(queue).toContainText('Request queue');
  await expect(queue.locator('[data-running]')).toHaveText(/^0 of \d+ started$/);
});
