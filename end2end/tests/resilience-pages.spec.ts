import { test, expect, Page, APIRequestContext } from '@playwright/test';
import { FAKE, hydrated, login } from './helpers';

/** A client key for /v1 calls (keys exist once the dashboard test ran). */
async function clientKey(request: APIRequestContext): Promise<string> {
  const resp = await request.post('/api/keys', { data: { name: `resilience-${Date.now()}` } });
  expect(resp.status()).toBe(201);
  return (await resp.json()).key;
}

async function addConnection(request: APIRequestContext, provider: string, name: string, apiKey: string, priority = 0) {
  const resp = await request.post('/api/providers', {
    data: { provider, name, apiKey, baseUrl: `${FAKE}/v1`, priority },
  });
  expect(resp.status(), await resp.text()).toBe(201);
  return (await resp.json()).connection.id as string;
}

async function fakeRule(page: Page, rule: object) {
  const resp = await page.request.post(`${FAKE}/_control/rules`, { data: rule });
  expect(resp.ok()).toBeTruthy();
}

async function chat(page: Page, key: string, model: string) {
  return page.request.post('/v1/chat/completions', {
    headers: { Authorization: `Bearer ${key}` },
    data: { model, messages: [{ role: 'user', content: 'hi' }] },
  });
}

test('Health shows an open breaker with its countdown, and Reset closes it', async ({ page }) => {
  await login(page);
  const key = await clientKey(page.request);
  // Two local connections: one request fails on both, and the local
  // profile opens after 2 provider failures.
  await addConnection(page.request, 'ollama', 'local-llm-1', 'unused', 0);
  await addConnection(page.request, 'ollama', 'local-llm-2', 'unused', 1);
  await fakeRule(page, { model: 'broken-model', status: 503, body: { error: { message: 'model crashed' } } });
  expect((await chat(page, key, 'ollama/broken-model')).status()).toBe(503);
  const open = await chat(page, key, 'ollama/broken-model');
  expect(open.status()).toBe(503);
  expect(open.headers()['x-omniroute-provider-breaker']).toBe('open');

  await page.goto('/monitoring/health');
  await hydrated(page);
  const row = page.locator('[data-breaker="ollama"]');
  // The report is cached for a second and the page refreshes every 5 s.
  await expect(row.locator('[data-state]')).toHaveText('open: failing fast', { timeout: 10_000 });
  await expect(row.locator('[data-state]')).toHaveAttribute('data-state', 'OPEN');
  const countdown = row.locator('[data-countdown]');
  const first = await countdown.textContent();
  await expect(countdown).not.toHaveText(first!, { timeout: 3_000 }); // ticks in the browser
  await expect(page.locator('[data-provider="ollama"]')).toBeVisible();
  await row.getByRole('button', { name: 'Reset ollama', exact: true }).click();
  await expect(page.locator('[data-breaker="ollama"]')).toHaveCount(0);
  await expect(page.getByTestId('breakers')).toHaveText('Every provider circuit breaker is closed.');
});

test('one status truth: a breaker opened by real traffic shows on the live Providers badge, Health and the Cooldown Manager, which resets it', async ({
  page,
}) => {
  await login(page);
  const key = await clientKey(page.request);
  const id = await addConnection(page.request, 'ollama', 'truth-local', 'unused', 2);
  await page.goto('/providers');
  await hydrated(page);
  const badge = page.locator(`[data-connection-id="${id}"] [data-status]`);
  await expect(badge).toHaveText('active');

  // The local profile opens after 2 provider failures (rule from the test above).
  await fakeRule(page, { model: 'broken-model', status: 503, body: { error: { message: 'model crashed' } } });
  for (let i = 0; i < 2; i++) expect((await chat(page, key, 'ollama/broken-model')).status()).toBe(503);

  // No reload: the badge follows on its own, with the time left.
  await expect(badge.locator('[data-status-word]')).toHaveText('breaker open', { timeout: 12_000 });
  await expect(badge.locator('[data-countdown]')).toBeVisible();

  await page.goto('/monitoring/health');
  await expect(page.getByTestId('health-status')).not.toHaveText('healthy');
  await expect(page.getByTestId('health-reasons')).toContainText('ollama: breaker open, failing fast; probing again in');
  // The chart's breaker band: the breaker just opened, and its state now reaches the right edge, visibly.
  // (An earlier test opened and reset it too: the last span is the current one.)
  const band = page.locator('[data-traffic-provider="ollama"] rect.band').last();
  await expect(band).toHaveClass(/OPEN/);
  const [x, width] = [Number(await band.getAttribute('x')), Number(await band.getAttribute('width'))];
  expect(width).toBeGreaterThanOrEqual(6);
  expect(x + width).toBeCloseTo(548, 0);
  await expect(band.locator('title')).toContainText('breaker open: failing fast since');

  await page.goto('/monitoring/cooldowns');
  await hydrated(page);
  const held = page.locator('[data-held-provider="ollama"]');
  await expect(held).toContainText('breaker open: failing fast');
  await held.getByRole('button', { name: 'Reset ollama' }).click();
  await expect(held).toHaveCount(0);
  const api = await (await page.request.get('/api/monitoring/health')).json();
  expect(api.providerBreakers.find((b: { provider: string }) => b.provider === 'ollama')).toBeUndefined();
});

test('the Cooldown Manager clears a cooling connection and leaves a terminal one', async ({ page }) => {
  await login(page);
  const key = await clientKey(page.request);
  const cooling = await addConnection(page.request, 'deepseek', 'cool-me', 'sk-cool-me', 0);
  const terminal = await addConnection(page.request, 'deepseek', 'broke', 'sk-broke', 1);
  await fakeRule(page, { apiKey: 'sk-cool-me', status: 429, times: 1, headers: { 'retry-after': '600' } });
  await fakeRule(page, { apiKey: 'sk-broke', status: 402, times: 1, body: { error: { message: 'insufficient balance' } } });
  expect((await chat(page, key, 'deepseek/deepseek-chat')).status()).toBe(402);

  await page.goto('/monitoring/cooldowns');
  await hydrated(page);
  const coolingRow = page.locator(`tr[data-connection-id="${cooling}"]`);
  const terminalRow = page.locator(`tr[data-connection-id="${terminal}"]`);
  await expect(coolingRow).toHaveAttribute('data-status', 'cooling down');
  await expect(coolingRow.locator('[data-countdown]')).toContainText('m');
  await expect(coolingRow.getByRole('button', { name: 'Clear cool-me', exact: true })).toBeVisible();
  await expect(terminalRow).toHaveAttribute('data-status', 'terminal: credits_exhausted');
  await expect(terminalRow.getByRole('checkbox')).toHaveCount(0);
  await expect(terminalRow.getByRole('link', { name: 'Reconnect on Providers' })).toBeVisible();
  await expect(terminalRow.getByRole('link', { name: 'Reconnect on Providers' })).toHaveAttribute('href', `/providers#connection-${terminal}`);

  await coolingRow.getByRole('checkbox').check();
  await page.getByRole('button', { name: 'Clear selected' }).click();
  await expect(page.getByTestId('clear-result')).toHaveText(
    'Cleared 1 connection; 0 unchanged; 0 terminal left as they are; 0 model lockouts lifted.',
  );
  await expect(page.locator(`tr[data-connection-id="${cooling}"]`)).toHaveCount(0);
  await expect(page.locator(`tr[data-connection-id="${terminal}"]`)).toBeVisible();
  // The cleared connection serves again.
  expect((await chat(page, key, 'deepseek/deepseek-chat')).status()).toBe(200);
  // The terminal one's link goes to its own row on Providers.
  await page.locator(`tr[data-connection-id="${terminal}"]`).getByRole('link', { name: 'Reconnect on Providers' }).click();
  await expect(page).toHaveURL(new RegExp(`/providers#connection-${terminal}$`));
  await expect(page.locator(`#connection-${terminal}`)).toBeInViewport();
});

test('a locked model is listed on Model Lockout and re-enabled from there', async ({ page }) => {
  await login(page);
  const key = await clientKey(page.request);
  await addConnection(page.request, 'mistral', 'mistral-main', 'sk-mistral');
  let resp = await page.request.patch('/api/resilience', { data: { modelLockout: { enabled: true } } });
  expect(resp.status()).toBe(200);
  await fakeRule(page, { model: 'retired-model', status: 404, body: { error: { message: 'no such model' } } });
  expect((await chat(page, key, 'mistral/retired-model')).status()).toBe(404);
  expect((await chat(page, key, 'mistral/retired-model')).status()).toBe(429);

  await page.goto('/settings/model-lockout');
  await hydrated(page);
  const row = page.locator('[data-card="model-cooldowns"] tr[data-model="retired-model"]');
  await expect(row).toContainText('mistral');
  await expect(row).toContainText('not_found');
  await expect(row.getByTestId('lock-connection')).toHaveText('mistral-main');
  await row.getByRole('button', { name: 'Re-enable retired-model on mistral-main', exact: true }).click();
  await expect(page.getByTestId('model-cooldowns')).toHaveText('No model is locked.');
  resp = await page.request.patch('/api/resilience', { data: { modelLockout: { enabled: false } } });
  expect(resp.status()).toBe(200);
});
