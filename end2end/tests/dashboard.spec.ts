import { test, expect } from '@playwright/test';
import { FAKE, hydrated, login } from './helpers';

test('unauthenticated pages redirect to /login and a wrong password is refused', async ({ page }) => {
  await page.goto('/providers');
  await expect(page).toHaveURL(/\/login\?next=%2Fproviders$/);
  await hydrated(page);
  await page.getByLabel('Admin password').fill('wrong');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert')).toContainText('Wrong password');
  await expect(page).toHaveURL(/\/login\?next=%2Fproviders$/);
});

test('connection, key, proxied request and log row, all from the browser (JS on)', async ({ page, request }) => {
  await login(page);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Providers' }).click();
  await expect(page).toHaveURL(/\/providers$/);
  await hydrated(page);

  await page.getByTestId('catalog').getByText('Provider catalog').click();
  await expect(page.getByTestId('catalog')).toContainText('opencode-go');
  await expect(page.getByTestId('catalog')).toContainText('https://api.openai.com/v1');

  const form = page.getByTestId('add-connection');
  await form.locator('select[name=provider]').selectOption('openai');
  await form.locator('input[name=name]').fill('e2e-openai');
  await form.locator('input[name=api_key]').fill('sk-e2e-secret-7788');
  await form.locator('input[name=base_url]').fill(`${FAKE}/v1`);
  await form.getByRole('button', { name: 'Add' }).click();

  const row = page.locator('tr', { hasText: 'e2e-openai' });
  await expect(row).toContainText('…7788');
  await expect(row).not.toContainText('sk-e2e-secret');
  await expect(row.locator('[data-status]')).toHaveText('active');
  await expect(page).toHaveURL(/\/providers$/); // no full reload, no redirect

  await row.getByRole('button', { name: 'Test' }).click();
  await expect(page.getByTestId('test-result')).toContainText('Test of e2e-openai passed: HTTP 200');
  await expect(row.getByTestId('last-test')).toHaveText('passed');

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys' }).click();
  await hydrated(page);
  await page.getByTestId('create-key').locator('input[name=name]').fill('e2e-agent');
  await page.getByRole('button', { name: 'Create' }).click();
  const key = (await page.getByTestId('new-key').textContent())!.trim();
  expect(key).toMatch(/^omr-/);
  await expect(page.getByTestId('keys')).toContainText('e2e-agent');
  await expect(page.getByTestId('keys')).not.toContainText(key);

  const resp = await request.post('/v1/chat/completions', {
    headers: { Authorization: `Bearer ${key}` },
    data: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello from e2e' }] },
  });
  expect(resp.status()).toBe(200);
  const requestId = resp.headers()['x-request-id'];
  expect((await resp.json()).choices[0].message.content).toContain('fake-upstream');

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Logs' }).click();
  const logRow = page.locator(`tr[data-request-id="${requestId}"]`);
  await expect(logRow).toBeVisible({ timeout: 15_000 });
  await expect(logRow.getByTestId('log-status')).toHaveText('200');
  await expect(logRow).toContainText('openai/gpt-4o-mini');
  // The connection by its name, the time relative with the absolute one on hover.
  await expect(logRow.getByTestId('log-connection')).toHaveText('e2e-openai');
  await expect(logRow.locator('td').first()).toHaveText(/ago$/);
  await expect(logRow.locator('td').first()).toHaveAttribute('title', /UTC$/);

  // Filters are case-insensitive substrings; a miss says so.
  const filters = page.getByTestId('log-filters');
  await filters.getByLabel('Connection').fill('E2E-OPEN');
  await filters.getByLabel('Model').fill('4O-MINI');
  await filters.getByLabel('Status').selectOption('2xx');
  await filters.getByRole('button', { name: 'Filter' }).click();
  await expect(page).toHaveURL(/connection=E2E-OPEN/);
  await expect(page.locator(`tr[data-request-id="${requestId}"]`)).toBeVisible();
  await filters.getByLabel('Status').selectOption('5xx');
  await filters.getByRole('button', { name: 'Filter' }).click();
  await expect(page.getByTestId('logs-empty')).toHaveText('No requests match these filters.');
  // Clear filters empties the inputs too: the next Filter applies nothing old.
  await filters.getByRole('link', { name: 'Clear filters' }).click();
  await expect(page).toHaveURL(/\/logs$/);
  await expect(filters.getByLabel('Connection')).toHaveValue('');
  await expect(filters.getByLabel('Model')).toHaveValue('');
  await expect(filters.getByLabel('Status')).toHaveValue('');
  await filters.getByRole('button', { name: 'Filter' }).click();
  await expect(page).not.toHaveURL(/connection=E2E|status=5xx/);
  await expect(page.locator(`tr[data-request-id="${requestId}"]`)).toBeVisible();
});

test('every navigation page is reachable and hydrates under its Content-Security-Policy', async ({ page }) => {
  const violations: string[] = [];
  page.on('console', (msg) => {
    if (/Content.Security.Policy/i.test(msg.text())) violations.push(msg.text());
  });
  await login(page);
  for (const [path, heading] of [
    ['/monitoring/health', 'Health'],
    ['/monitoring/cooldowns', 'Cooldown Manager'],
    ['/combos', 'Combos'],
    ['/settings/resilience', 'Settings → Resilience'],
    ['/settings/model-lockout', 'Settings → Model Lockout'],
    ['/logs', 'Logs'],
    ['/usage', 'Usage'],
    ['/keys', 'API keys'],
    ['/providers', 'Providers'],
  ]) {
    await page.goto(path);
    await expect(page.getByRole('heading', { level: 1 })).toHaveText(heading);
    await hydrated(page);
  }
  expect(violations).toEqual([]);
});

test('a success clears the last failure banner, and a saved edit folds its form away', async ({ page }) => {
  await login(page);
  await page.goto('/providers');
  await hydrated(page);
  const form = page.getByTestId('add-connection');
  const add = async (name: string, baseUrl: string) => {
    await form.locator('select[name=provider]').selectOption('openai');
    await form.locator('input[name=name]').fill(name);
    await form.locator('input[name=api_key]').fill('sk-e2e-banner');
    await form.locator('input[name=base_url]').fill(baseUrl);
    await form.getByRole('button', { name: 'Add' }).click();
  };
  await add('e2e-banner', `${FAKE}/v1`);
  const row = page.locator('tr', { hasText: 'e2e-banner' });
  await expect(row.locator('[data-status]')).toHaveText('active');
  // The form empties after a successful add: no API key lingers.
  await expect(form.locator('input[name=api_key]')).toHaveValue('');
  await expect(form.locator('input[name=name]')).toHaveValue('');

  // One action fails, another then succeeds: the failure's banner goes.
  await add('e2e-banner-bad', 'not a url');
  await expect(page.getByRole('alert')).toContainText('Base URL: must be an absolute');
  // The refused field says so next to its input, which points at the message.
  const note = form.locator('[data-field-error="baseUrl"]');
  await expect(note).toHaveText('must be an absolute http:// or https:// URL');
  const baseUrl = form.locator('input[name=base_url]');
  await expect(baseUrl).toHaveAttribute('aria-invalid', 'true');
  await expect(baseUrl).toHaveAttribute('aria-describedby', (await note.getAttribute('id'))!);
  await expect(form.locator('[data-field-error="name"]')).toHaveCount(0);
  await expect(page.getByRole('alert')).not.toContainText('error running server function');
  // A refused add keeps what was typed.
  await expect(form.locator('input[name=name]')).toHaveValue('e2e-banner-bad');
  await row.getByRole('button', { name: 'Test' }).click();
  await expect(page.getByTestId('test-result')).toContainText('Test of e2e-banner passed');
  await expect(page.getByRole('alert')).toHaveCount(0);

  const edit = row.getByTestId('edit');
  // Row buttons are named by their row; Cancel folds the form unsaved.
  await row.getByRole('button', { name: 'Test e2e-banner' }).waitFor();
  // Shut, the panel holds no form (a page of rows carries none to scan and hydrate).
  await expect(edit.locator('form')).toHaveCount(0);
  const openEdit = edit.getByRole('link', { name: 'Edit e2e-banner' });
  await openEdit.click();
  await expect(edit).toHaveAttribute('data-open', '');
  // The form opens in a side panel, whole within the window, the focus on its first field.
  const panel = edit.getByRole('dialog', { name: 'Edit the connection “e2e-banner”' });
  const box = (await panel.boundingBox())!;
  const width = page.viewportSize()!.width;
  expect(box.x).toBeGreaterThanOrEqual(0);
  expect(box.x + box.width).toBeLessThanOrEqual(width);
  expect(box.width).toBeGreaterThanOrEqual(Math.min(width, 480));
  await expect(edit.getByLabel('Name')).toBeFocused();
  // Escape shuts it, and the focus goes back to Edit.
  await page.keyboard.press('Escape');
  await expect(edit).not.toHaveAttribute('data-open', /.*/);
  await expect(edit.locator('form')).toHaveCount(0);
  await expect(openEdit).toBeFocused();
  await openEdit.click();
  await edit.getByLabel('Name').fill('not-saved');
  await edit.getByRole('link', { name: 'Cancel' }).click();
  await expect(edit).not.toHaveAttribute('data-open', /.*/);
  await expect(page).toHaveURL(/\/providers$/);
  await openEdit.click();
  await edit.getByLabel('Name').fill('e2e-banner-renamed');
  await edit.getByRole('button', { name: 'Save' }).click();
  const renamed = page.locator('tr', { hasText: 'e2e-banner-renamed' });
  await expect(renamed).toBeVisible();
  await expect(renamed.getByTestId('edit')).not.toHaveAttribute('data-open', /.*/);
  // Each success says what it did, in the page's live region.
  await expect(page.getByRole('status').filter({ hasText: 'Connection saved.' })).toBeVisible();
  await renamed.getByText('Delete', { exact: true }).click();
  await page.locator('dialog:modal').getByRole('button', { name: 'Delete connection' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Connection deleted.' })).toBeVisible();
  await expect(page.locator('tr', { hasText: 'e2e-banner-renamed' })).toHaveCount(0);
});

test('a failed connection test is red and says why', async ({ page }) => {
  await login(page);
  await page.request.post(`${FAKE}/_control/rules`, {
    data: { apiKey: 'sk-e2e-revoked', status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } } },
  });
  const added = await page.request.post('/api/providers', {
    data: { provider: 'openrouter', name: 'e2e-revoked', apiKey: 'sk-e2e-revoked', baseUrl: `${FAKE}/v1` },
  });
  expect(added.status()).toBe(201);
  await page.goto('/providers');
  await hydrated(page);
  const row = page.locator('tr', { hasText: 'e2e-revoked' });
  await row.getByRole('button', { name: 'Test e2e-revoked' }).click();
  const result = page.getByTestId('test-result');
  await expect(result).toHaveAttribute('data-ok', 'false');
  await expect(result).toHaveClass(/bg-red-100/);
  await expect(result.getByTestId('error-message')).toContainText('Incorrect API key provided');
  const lastTest = row.getByTestId('last-test');
  await expect(lastTest.locator('[data-failed]')).toHaveText('failed');
  await expect(lastTest.getByTestId('error-message')).toContainText('Incorrect API key provided');
  const removed = await page.request.delete(`/api/providers/${(await added.json()).connection.id}`, { data: {} });
  expect(removed.status()).toBe(200);
});
