import { test, expect } from '@playwright/test';
import { ADMIN_PASSWORD, FAKE, hydrated, login } from './helpers';

const BASE = process.env.OMNIROUTE_URL ?? '';

test('Get started creates a key and fills it into every copy-ready snippet (JS on)', async ({ page, context }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await login(page);
  const added = await page.request.post('/api/providers', {
    data: { provider: 'openai', name: 'onboarding-openai', apiKey: 'sk-onboarding-1', baseUrl: `${FAKE}/v1` },
  });
  expect(added.status()).toBe(201);
  await page.goto('/get-started');
  await hydrated(page);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Get started');
  // A connection exists: step 1 is done.
  await expect(page.locator('[data-step="1"]')).toHaveAttribute('data-done', 'true');
  const claude = page.locator('[data-snippet="Claude Code"] [data-testid=snippet]');
  await expect(claude).toContainText('<your key>');

  await page.getByTestId('create-key').getByLabel('Key name').fill('onboarding-key');
  await page.getByRole('button', { name: 'Create key' }).click();
  const key = (await page.getByTestId('new-key').textContent())!;
  expect(key).toMatch(/^omr-/);
  await expect(claude).toContainText(`ANTHROPIC_BASE_URL=${BASE} ANTHROPIC_AUTH_TOKEN=${key}`);
  for (const agent of ['Codex CLI', 'opencode', 'aider', 'OpenAI SDK', 'Anthropic SDK']) {
    await expect(page.locator(`[data-snippet="${agent}"] [data-testid=snippet]`)).toContainText(key);
  }
  await page.getByRole('button', { name: 'Copy the Claude Code setup' }).click();
  await expect(page.getByRole('button', { name: 'Copy the Claude Code setup' })).toHaveText('Copied');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toContain(key);

  // The key works for the snippet's base URL.
  const models = await page.request.get('/v1/models', { headers: { Authorization: `Bearer ${key}` } });
  expect(models.status()).toBe(200);
});

test.describe('without JavaScript', () => {
  test.use({ javaScriptEnabled: false });

  test('the key created on Get started comes back in the snippets', async ({ page }) => {
    await page.goto('/login?next=%2Fget-started');
    await page.getByLabel('Admin password').fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page).toHaveURL(/\/get-started$/);
    await expect(page.getByRole('button', { name: /^Copy/ })).toHaveCount(0);
    await page.getByTestId('create-key').getByLabel('Key name').fill('onboarding-nojs');
    await page.getByRole('button', { name: 'Create key' }).click();
    await expect(page).toHaveURL(/\/get-started\?created=/);
    const key = (await page.getByTestId('new-key').textContent())!;
    expect(key).toMatch(/^omr-/);
    await expect(page.locator('[data-snippet="aider"] [data-testid=snippet]')).toContainText(`--openai-api-key ${key}`);
  });
});
