import { test, expect, Page } from '@playwright/test';
import { FAKE, editCard, hydrated, login } from './helpers';

async function openSettings(page: Page, path: string) {
  await login(page);
  await page.goto(path);
  await hydrated(page);
}

/** Counts card saves sent to the server from this page. */
function countSaves(page: Page) {
  const sent = { n: 0 };
  page.on('request', (r) => {
    if (r.url().includes('/sfn/save_resilience')) sent.n += 1;
  });
  return sent;
}

test('a card refuses an invalid value in the browser, saves a valid one, and keeps it after a reload', async ({ page }) => {
  await openSettings(page, '/settings/resilience');
  const saves = countSaves(page);
  const card = page.locator('[data-card="combo-cooldown-wait"]');
  await editCard(card);
  const maxWait = card.getByLabel('Max wait', { exact: true });
  const save = card.getByRole('button', { name: 'Save' });

  await maxWait.fill('400000');
  await expect(card.locator('[data-error="comboCooldownWait.maxWaitMs"][data-origin="browser"]')).toContainText(
    'between 0 and 5 min',
  );
  await expect(save).toBeDisabled();
  // The cross-field rule too: the budget must cover one full wait.
  // Typed with its unit, read back in words as it is typed.
  await maxWait.fill('2 min');
  await expect(card.locator('[data-human="comboCooldownWait.maxWaitMs"]')).toHaveText('= 2 min');
  await card.getByLabel('Total budget', { exact: true }).fill('100000');
  await expect(card.locator('[data-error="comboCooldownWait.budgetMs"]')).toContainText('at least maxWaitMs');
  await expect(save).toBeDisabled();
  await card.getByLabel('Total budget', { exact: true }).fill('240000');
  await card.getByLabel('Max attempts').fill('3');
  await expect(card.locator('[data-error]')).toHaveCount(0);
  expect(saves.n).toBe(0);

  await save.click();
  await expect(card.getByRole('status')).toHaveText('Saved.');
  expect(saves.n).toBe(1);
  await expect(page).toHaveURL(/\/settings\/resilience$/);
  await expect(card.locator('[data-value="comboCooldownWait.maxWaitMs"]')).toHaveText('2 min');
  expect((await (await page.request.get('/api/resilience')).json()).comboCooldownWait.maxWaitMs).toBe(120000);

  await page.reload();
  await hydrated(page);
  const reloaded = page.locator('[data-card="combo-cooldown-wait"]');
  await expect(reloaded.locator('[data-value="comboCooldownWait.maxWaitMs"]')).toHaveText('2 min');
  await expect(reloaded.locator('[data-value="comboCooldownWait.budgetMs"]')).toHaveText('4 min');
  // A value that differs from the default says so, and goes back to it in one click (unsaved until Save).
  await editCard(reloaded);
  await expect(reloaded.locator('[data-default="comboCooldownWait.maxWaitMs"]')).toHaveText('default 90 s');
  await expect(reloaded.locator('[data-changed="comboCooldownWait.maxWaitMs"]')).toHaveText('changed');
  await expect(reloaded.locator('[data-changed="comboCooldownWait.maxAttempts"]')).toHaveCount(1);
  await expect(reloaded.locator('[data-changed="comboCooldownWait.enabled"]')).toHaveCount(0);
  await reloaded.locator('[data-field="comboCooldownWait.maxWaitMs"]').getByRole('button', { name: 'reset to default' }).click();
  await expect(reloaded.getByLabel('Max wait', { exact: true })).toHaveValue('90 s');
  await expect(reloaded.locator('[data-human="comboCooldownWait.maxWaitMs"]')).toHaveText('= 90 s');
  await reloaded.getByRole('button', { name: 'Cancel' }).click();
  await expect(reloaded.locator('[data-value="comboCooldownWait.maxAttempts"]')).toHaveText('3');
  const api = await (await page.request.get('/api/resilience')).json();
  expect(api.comboCooldownWait).toEqual({ enabled: true, maxWaitMs: 120000, maxAttempts: 3, budgetMs: 240000 });
});

test('the session affinity card says what the engine pins, and Health counts the pinned sessions', async ({ page }) => {
  await openSettings(page, '/settings/resilience');
  const card = page.locator('[data-card="session-affinity"]');
  await expect(card).toContainText('X-Claude-Code-Session-Id');
  await expect(card).toContainText('a 429 or a terminal error there unpins');
  // A provider with two connections (more, if other tests added some):
  // each session is pinned to the connection that served it.
  for (const [name, priority] of [['pins-first', 0], ['pins-second', 1]] as const) {
    const resp = await page.request.post('/api/providers', {
      data: { provider: 'minimax', name, apiKey: `sk-${name}`, baseUrl: `${FAKE}/v1`, priority },
    });
    expect(resp.status(), await resp.text()).toBe(201);
  }
  const key = (await (await page.request.post('/api/keys', { data: { name: `pins-${Date.now()}` } })).json()).key;
  const served = new Map<string, number>();
  for (const session of ['pinned-a', 'pinned-b']) {
    const r = await page.request.post('/v1/chat/completions', {
      headers: { Authorization: `Bearer ${key}`, 'X-Session-Id': session },
      data: { model: 'minimax/MiniMax-M2', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(r.status(), await r.text()).toBe(200);
    const id = r.headers()['x-omniroute-selected-connection-id'];
    served.set(id, (served.get(id) ?? 0) + 1);
  }
  await page.goto('/monitoring/health');
  const pins = page.getByTestId('session-pins');
  for (const [id, sessions] of served) {
    const cell = pins.locator(`tr[data-connection="${id}"] [data-sessions]`);
    await expect.poll(async () => Number(await cell.textContent()), { timeout: 11_000 }).toBeGreaterThanOrEqual(sessions);
  }
  await expect(pins).toContainText(/A pin lasts \d+h \d+m after the session's last request/);
});

test('the server re-checks a save and its field errors are shown at the field', async ({ page }) => {
  await openSettings(page, '/settings/resilience');
  const card = page.locator('[data-card="provider-breaker"]');
  await editCard(card);
  await card.getByLabel('API key · degradation threshold').fill('20');
  const save = card.getByRole('button', { name: 'Save' });
  await expect(save).toBeDisabled();
  // Bypass the browser check, as a stale or tampered page would.
  await save.evaluate((b) => b.removeAttribute('disabled'));
  await save.click();
  await expect(
    card.locator('[data-error="providerBreaker.apikey.degradationThreshold"][data-origin="server"]'),
  ).toContainText('must be less than failureThreshold (12)');
  const api = await (await page.request.get('/api/resilience')).json();
  expect(api.providerBreaker.apikey.degradationThreshold).toBe(7);
  // Editing the field again clears the server's verdict.
  await card.getByLabel('API key · degradation threshold').fill('9');
  await expect(card.locator('[data-origin="server"]')).toHaveCount(0);
  await card.getByRole('button', { name: 'Cancel' }).click();
  await expect(card.getByLabel('API key · degradation threshold')).toBeHidden();
});

test('values set by the environment are marked, and the winning one is read-only', async ({ page }) => {
  await openSettings(page, '/settings/resilience');
  const card = page.locator('[data-card="request-queue"]');
  await editCard(card);
  await expect(card.locator('[data-env="RATE_LIMIT_AUTO_ENABLE"]')).toHaveText('set by env RATE_LIMIT_AUTO_ENABLE');
  await expect(card.getByLabel(/Protect every API-key connection/)).toBeDisabled();
  await expect(card.locator('[data-env="RATE_LIMIT_MAX_QUEUE_DEPTH"]')).toHaveText(
    'default from env RATE_LIMIT_MAX_QUEUE_DEPTH',
  );
  await expect(card.locator('[data-value="requestQueue.maxQueueDepth"]')).toHaveText('500');
  // Saving the card leaves the pinned field alone.
  await card.getByLabel('Requests per minute').fill('90');
  await card.getByRole('button', { name: 'Save' }).click();
  await expect(card.getByRole('status')).toHaveText('Saved.');
  const api = await (await page.request.get('/api/resilience')).json();
  expect(api.requestQueue.requestsPerMinute).toBe(90);
  expect(api.requestQueue.autoEnableApiKeyProviders).toBe(true);
});

test('operator error rules are added in the list editor', async ({ page }) => {
  await openSettings(page, '/settings/resilience');
  const card = page.locator('[data-card="provider-error-rules"]');
  await expect(card.locator('[data-value="providerErrorRules"]')).toHaveText('0 rules');
  await editCard(card);
  await card.getByLabel('Rule 1 provider').fill('glm');
  await card.getByLabel('Rule 1 status').fill('4x0');
  await expect(card.locator('[data-error="providerErrorRules"]')).toContainText('providerErrorRules.0.status');
  await card.getByLabel('Rule 1 status').fill('400');
  await card.getByLabel('Rule 1 match').fill('model is unavailable');
  await card.getByLabel('Rule 1 scope').selectOption('model');
  await card.getByLabel('Rule 1 cooldownMs').fill('60000');
  await card.getByRole('button', { name: 'Add rule' }).click();
  await card.getByLabel('Rule 2 provider').fill('openrouter');
  await card.getByRole('row').nth(2).getByRole('button', { name: 'Remove' }).click();
  await expect(card.getByLabel('Rule 2 provider')).toHaveCount(0);
  await card.getByRole('button', { name: 'Save' }).click();
  await expect(card.getByRole('status')).toHaveText('Saved.');
  await expect(card.locator('[data-value="providerErrorRules"]')).toHaveText('1 rule');
  const api = await (await page.request.get('/api/resilience')).json();
  expect(api.providerErrorRules).toEqual([
    { provider: 'glm', status: 400, match: 'model is unavailable', scope: 'model', reason: null, cooldownMs: 60000 },
  ]);
});

test('model lockout: chips refuse bad codes, save, reload, and reset to defaults', async ({ page }) => {
  await openSettings(page, '/settings/model-lockout');
  const card = page.locator('[data-card="model-lockout"]');
  await editCard(card);
  const add = card.getByLabel('Add error code');
  await add.fill('700');
  await card.getByRole('button', { name: 'Add', exact: true }).click();
  await expect(card.locator('[data-error="chip"]')).toContainText('between 100 and 599');
  await add.fill('429');
  await card.getByRole('button', { name: 'Add', exact: true }).click();
  await expect(card.locator('[data-error="chip"]')).toContainText('already listed');
  await add.fill('418');
  await card.getByRole('button', { name: 'Add', exact: true }).click();
  await expect(card.locator('[data-chip="418"]')).toBeVisible();
  await card.getByRole('button', { name: 'Remove 404' }).click();
  await expect(card.locator('[data-chip="404"]')).toHaveCount(0);
  await card.getByLabel('Enabled').check();
  await card.getByLabel(/Base cooldown/).fill('60000');
  await card.getByLabel(/Max cooldown/).fill('30000');
  await expect(card.locator('[data-error="modelLockout.maxCooldownMs"]')).toContainText('at least baseCooldownMs');
  await card.getByLabel(/Max cooldown/).fill('900000');
  await card.getByRole('button', { name: 'Save' }).click();
  await expect(card.getByRole('status')).toHaveText('Saved.');

  await page.reload();
  await hydrated(page);
  const again = page.locator('[data-card="model-lockout"]');
  await expect(again.locator('[data-value="modelLockout.errorCodes"]')).toHaveText('403, 429, 502, 503, 504, 418');
  await expect(again.locator('[data-value="modelLockout.enabled"]')).toHaveText('on');
  await expect(again.locator('[data-value="modelLockout.maxCooldownMs"]')).toHaveText('15 min');

  await editCard(again);
  await again.getByRole('button', { name: 'Reset to defaults' }).click();
  await expect(again.locator('[data-chip="404"]')).toBeVisible();
  await expect(again.getByLabel(/Base cooldown/)).toHaveValue('2 min');
  await expect(again.getByLabel('Enabled')).not.toBeChecked();
  await again.getByRole('button', { name: 'Save' }).click();
  await expect(again.locator('[data-value="modelLockout.errorCodes"]')).toHaveText('403, 404, 429, 502, 503, 504');
});

test('connection order is picked from a list; the emergency fallback is checked as typed and by the server', async ({ page }) => {
  await openSettings(page, '/settings/resilience');
  const order = page.locator('[data-card="connection-order"]');
  await editCard(order);
  await order.getByLabel('Order').selectOption('round-robin');
  await order.getByRole('button', { name: 'Save' }).click();
  await expect(order.getByRole('status')).toHaveText('Saved.');
  await expect(order.locator('[data-value="fallbackStrategy"]')).toHaveText('round-robin');

  const flags = page.locator('[data-card="emergency-fallback"]');
  await editCard(flags);
  const target = flags.getByLabel('Last-resort target (provider/model)');
  const save = flags.getByRole('button', { name: 'Save' });
  await target.fill('ollama');
  await expect(flags.locator('[data-error="emergencyFallback"][data-origin="browser"]')).toContainText('provider/model');
  await expect(save).toBeDisabled();
  // The shape is right but the provider is not in the catalog: the server says so at the field.
  await target.fill('nope/model');
  await save.click();
  await expect(flags.locator('[data-error="emergencyFallback"][data-origin="server"]')).toContainText(
    'not a provider of the catalog',
  );
  await target.fill('ollama/llama3.2');
  await save.click();
  await expect(flags.getByRole('status')).toHaveText('Saved.');

  await page.reload();
  await expect(page.locator('[data-value="emergencyFallback"]')).toHaveText('ollama/llama3.2');
  await expect(page.locator('[data-value="fallbackStrategy"]')).toHaveText('round-robin');
  const api = await (await page.request.get('/api/resilience')).json();
  expect([api.fallbackStrategy, api.emergencyFallback]).toEqual(['round-robin', 'ollama/llama3.2']);
  // Back to the defaults, for the tests that route after this one.
  const reset = await page.request.patch('/api/resilience', { data: { fallbackStrategy: 'fill-first', emergencyFallback: '' } });
  expect(reset.status()).toBe(200);
});

test('Resilience is a table of contents and cards folded to a line each; a duration error reads in the unit typed', async ({ page }) => {
  await openSettings(page, '/settings/resilience');
  const contents = page.getByRole('navigation', { name: 'Sections' });
  await expect(contents.getByRole('link')).toHaveCount(14);
  // Folded, fourteen cards fit in little more than one screen (it was 4,064 px).
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  expect(height).toBeLessThan(1600);
  const card = page.locator('[data-card="request-queue"]');
  await expect(card.getByTestId('card-line')).toContainText('Max queue wait');
  await expect(card.getByLabel('Requests per minute')).toBeHidden();
  await contents.getByRole('link', { name: 'Request queue' }).click();
  await expect(page).toHaveURL(/#request-queue$/);
  // Folded cards carry no form (the page stays light); Edit opens the
  // card's form in place, with the focus in its first field.
  await expect(page.locator('[data-card] form')).toHaveCount(0);
  await editCard(card);
  await expect(page.locator('[data-card] form')).toHaveCount(1);
  await expect(card.locator('form :focus')).toHaveCount(1);
  const wait = card.getByLabel('Max queue wait');
  await expect(wait).toHaveValue(/^\d+ (s|min|h)$/);
  await wait.fill('2 d');
  await expect(card.locator('[data-error="requestQueue.maxWaitMs"]')).toHaveText('must be between 1 ms and 1 d');
  await card.getByRole('button', { name: 'Cancel' }).click();
  await expect(page.locator('[data-card] form')).toHaveCount(0);
  await expect(card.getByRole('link', { name: 'Edit' })).toBeVisible();
});
