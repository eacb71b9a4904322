import { test, expect, Page } from '@playwright/test';
import { FAKE, hydrated, login } from './helpers';

async function setup(page: Page) {
  await login(page);
  const created = await page.request.post('/api/keys', { data: { name: `traffic-${Date.now()}` } });
  expect(created.status()).toBe(201);
  const key = (await created.json()).key as string;
  const existing = await (await page.request.get('/api/providers')).json();
  if (!existing.connections.some((c: { name: string }) => c.name === 'chart-glm')) {
    const conn = await page.request.post('/api/providers', {
      data: { provider: 'glm', name: 'chart-glm', apiKey: 'sk-chart-glm', baseUrl: `${FAKE}/v1`, priority: 0 },
    });
    expect(conn.status(), await conn.text()).toBe(201);
  }
  await page.request.post(`${FAKE}/_control/rules`, {
    data: { model: 'glm-broken', status: 503, body: { error: { message: 'glm is down' } } },
  });
  await page.request.post(`${FAKE}/_control/rules`, {
    data: { model: 'glm-rejects', status: 400, body: { error: { message: 'max_tokens is too large', type: 'invalid_request_error' } } },
  });
  const chat = (model: string, bearer = key) =>
    page.request.post('/v1/chat/completions', {
      headers: { Authorization: `Bearer ${bearer}` },
      data: { model, messages: [{ role: 'user', content: 'hi' }] },
    });
  /** Ends what a failure left behind (the connection's cooldown, the breaker's count). */
  const recover = async () => {
    expect((await page.request.post('/api/resilience/cooldowns', { data: { all: true, provider: 'glm' } })).ok()).toBeTruthy();
    expect((await page.request.post('/api/resilience/reset', { data: { provider: 'glm' } })).ok()).toBeTruthy();
  };
  return { chat, recover };
}

test('Health charts traffic from real requests, per provider and connection, and follows new requests live', async ({
  page,
}) => {
  const { chat, recover } = await setup(page);
  for (let i = 0; i < 3; i++) expect((await chat('glm/glm-4.6')).status()).toBe(200);
  expect((await chat('glm/glm-broken')).status()).toBe(503);
  await recover();

  await page.goto('/monitoring/health');
  await hydrated(page);
  const glm = page.locator('[data-traffic-provider="glm"]');
  // The log writer batches rows (a fraction of a second); the page refreshes every 5 s.
  await expect(glm.getByTestId('traffic-total')).toContainText(/requests · 3 2xx · \d+ 5xx/, { timeout: 12_000 });
  const chart = glm.getByRole('img', { name: 'Requests and latency of glm' });
  // The requests may straddle a minute: one bucket or two.
  await expect(chart.locator('rect.ok').first()).toBeAttached();
  await expect(chart.locator('rect.c5xx')).toHaveCount(1);
  // Hover text: the bucket's exact values.
  await expect(chart.locator('g.bucket title').filter({ hasText: '5xx' })).toContainText(/\d+ requests · .*\d+ 5xx/);
  await expect(page.getByTestId('chart-legend').first()).toContainText('429');
  await expect(page.locator('[data-tile="Requests (last hour)"]')).not.toHaveText('0');
  // Tokens the answers reported, on the tile and in the provider's summary.
  await expect(page.locator('[data-tile="Tokens (last hour)"]')).toHaveText(/^[\d.]+k? in · [\d.]+k? out$/);
  await expect(page.locator('[data-tile="Tokens (last hour)"]')).not.toHaveText('0 in · 0 out');
  await expect(glm.getByTestId('traffic-total')).toContainText(/tokens in.*, [\d.]+k? out/);

  // Per connection, on expand; the disclosure stays open across refreshes.
  await glm.getByText('Connections (1)').click();
  await expect(glm.locator('[data-traffic-connection="chart-glm"]')).toBeVisible();

  // Live: a new request shows without a reload.
  expect((await chat('glm/glm-4.6')).status()).toBe(200);
  await expect(glm.getByTestId('traffic-total')).toContainText(/requests · 4 2xx · \d+ 5xx/, { timeout: 12_000 });
  await expect(glm.locator('[data-traffic-connection="chart-glm"]')).toBeVisible();

  // The day: 48 half-hour buckets, the same requests.
  await page.getByRole('navigation', { name: 'Traffic window' }).getByRole('link', { name: 'last 24 hours' }).click();
  await expect(page).toHaveURL(/window=24h/);
  await expect(glm.getByTestId('traffic-total')).toContainText('4 2xx');
  // The tiles still hold the last hour, and say so against the day's charts.
  await expect(page.getByTestId('traffic-tiles-caption')).toHaveText(
    'The last hour, against the hour before (the charts below cover the last 24 hours):',
  );
  await expect(glm.getByRole('img', { name: 'Requests and latency of glm' }).locator('g.bucket')).toHaveCount(48);
});

test('Health charts render without JavaScript', async ({ browser }) => {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  await login(page);
  await page.goto('/monitoring/health?window=1h');
  const glm = page.locator('[data-traffic-provider="glm"]');
  await expect(glm.getByRole('img', { name: 'Requests and latency of glm' }).locator('g.bucket')).toHaveCount(60);
  await glm.getByText('As a table').click();
  await expect(glm.locator('table')).toContainText('2xx');
  await context.close();
});

test('Logs show a refused request and each request’s attempt trail', async ({ page }) => {
  const { chat } = await setup(page);
  expect((await chat('glm/glm-4.6', 'sk-not-a-key')).status()).toBe(401);
  // A request error is the client's answer: its row keeps the upstream's body.
  expect((await chat('glm/glm-rejects')).status()).toBe(400);

  await page.goto('/logs');
  await hydrated(page);
  const refused = page.locator('tr[data-refused="true"]').filter({ hasText: 'invalid_api_key' }).first();
  await expect(refused).toContainText('refused by the gateway', { timeout: 12_000 });
  await expect(refused.getByTestId('log-status')).toHaveText('401');

  const failed = page.locator('tr').filter({ hasText: 'glm/glm-rejects' }).first();
  await expect(failed).toBeVisible({ timeout: 12_000 });
  const requestId = await failed.getAttribute('data-request-id');
  await failed.getByRole('link', { name: `Attempt trail of request ${requestId}` }).click();
  await expect(page).toHaveURL(new RegExp(`request=${requestId}`));
  await expect(page.getByTestId('trail-heading')).toContainText(requestId!);
  const rows = page.locator('[data-testid="logs"] tbody tr');
  await expect(rows.first()).toHaveAttribute('data-request-id', requestId!);
  await expect(rows.first().getByTestId('log-connection')).toHaveText('chart-glm');
  // The upstream's sentence, its raw body behind Details.
  const error = rows.first().getByTestId('log-error');
  await expect(error.getByTestId('error-message')).toContainText('max_tokens is too large');
  await expect(error.getByTestId('error-message')).not.toContainText('{');
  await error.getByText('Details').click();
  await expect(error.locator('pre')).toContainText('"type":"invalid_request_error"');
  await page.getByRole('link', { name: '← All requests' }).click();
  await expect(page.getByTestId('log-filters')).toBeVisible();
});
