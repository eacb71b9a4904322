import { test, expect } from '@playwright/test';
import { LANDING, ADMIN_PASSWORD, FAKE } from './helpers';

// Every action must work as a plain form post before hydration.
test.use({ javaScriptEnabled: false });

test('login, add/disable/delete a connection and create/revoke a key without JavaScript', async ({ page }) => {
  await page.goto('/login');
  await page.getByLabel('Admin password').fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(LANDING);

  await page.goto('/providers');
  const form = page.getByTestId('add-connection');
  await form.locator('select[name=provider]').selectOption('deepseek');
  await form.locator('input[name=name]').fill('nojs-deepseek');
  await form.locator('input[name=api_key]').fill('sk-nojs-1234');
  await form.locator('input[name=base_url]').fill(`${FAKE}/v1`);
  await form.getByRole('button', { name: 'Add' }).click();
  await expect(page).toHaveURL(/\/providers\??$/);
  const row = page.locator('tr', { hasText: 'nojs-deepseek' });
  await expect(row).toContainText('…1234');

  // A server-side validation error comes back as a banner.
  await form.locator('select[name=provider]').selectOption('openai-compatible');
  await form.locator('input[name=name]').fill('needs-url');
  await form.getByRole('button', { name: 'Add' }).click();
  await expect(page.getByRole('alert')).toContainText('baseUrl');
  await expect(page.locator('tr', { hasText: 'needs-url' })).toHaveCount(0);

  // Edit is a link: the page comes back with the row's panel open; the
  // form posts and the page reloads, the panel shut. A later success
  // clears the refusal's banner.
  await expect(row.locator('form input[name=name]')).toHaveCount(0);
  await row.getByText('Edit', { exact: true }).click();
  await expect(page).toHaveURL(/\?edit=connection-[^#]+#connection-/);
  await row.getByLabel('Name').fill('nojs-renamed');
  await row.getByLabel('Priority').fill('7');
  await row.getByRole('button', { name: 'Save' }).click();
  const renamed = page.locator('tr', { hasText: 'nojs-renamed' });
  await expect(renamed).toContainText('…1234');
  await expect(page.getByRole('alert')).toHaveCount(0);
  expect(page.url()).not.toContain('error=');
  await expect(renamed.locator('td').nth(3)).toHaveText('7');

  await renamed.getByRole('button', { name: 'Disable' }).click();
  await expect(page.locator('tr', { hasText: 'nojs-renamed' }).locator('[data-status]')).toHaveText('disabled');
  // Deleting asks first (a disclosure: no JavaScript needed).
  await page.locator('tr', { hasText: 'nojs-renamed' }).getByText('Delete', { exact: true }).click();
  await page.locator('tr', { hasText: 'nojs-renamed' }).getByRole('button', { name: 'Delete connection' }).click();
  await expect(page.locator('tr', { hasText: 'nojs-renamed' })).toHaveCount(0);

  await page.goto('/keys');
  await page.getByTestId('create-key').locator('input[name=name]').fill('nojs-key');
  await page.getByRole('button', { name: 'Create' }).click();
  await expect(page).toHaveURL(/\/keys\?created=/);
  await expect(page.getByTestId('new-key')).toContainText('omr-');
  // Shown once: a reload no longer shows it.
  await page.reload();
  await expect(page.getByTestId('new-key')).toHaveCount(0);
  const keyRow = page.locator('tr', { hasText: 'nojs-key' });
  await expect(keyRow.locator('[data-scopes]')).toHaveText('inference');
  // The confirmation is a disclosure: it opens without JavaScript.
  await keyRow.getByText('Revoke', { exact: true }).click();
  await expect(page.locator('dialog:modal')).toHaveCount(0);
  await expect(keyRow.getByRole('button', { name: 'Cancel' })).toBeHidden();
  await keyRow.getByRole('button', { name: 'Revoke key' }).click();
  await expect(page.locator('tr', { hasText: 'nojs-key' })).toHaveCount(0);
});

test('a settings card saves as a plain form post; a refused one comes back open, as typed, marked at the field', async ({ page }) => {
  await page.goto('/login');
  await page.getByLabel('Admin password').fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.goto('/settings/resilience');
  const card = page.locator('[data-card="session-affinity"]');
  // Folded to a line; <details> opens natively.
  await expect(card.getByTestId('card-line')).toContainText('Pin lifetime');
  await card.locator('summary').first().click();
  await expect(card.locator('form')).toHaveCount(0);
  // Edit is a link: the page comes back with this card's form open.
  await card.getByText('Edit', { exact: true }).click();
  await expect(page).toHaveURL(/\?edit=session-affinity#session-affinity$/);
  // A duration is shown and typed in natural units, also without JS.
  await expect(card.getByLabel('Pin lifetime')).toHaveValue(/ h$/);
  await card.getByLabel('Pin lifetime').fill('2 h');
  await card.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/settings\/resilience\??$/);
  await expect(page.locator('[data-card="session-affinity"] [data-value="sessionAffinityTtlMs"]')).toHaveText('2 h');

  const again = page.locator('[data-card="session-affinity"]');
  await again.locator('summary').first().click();
  await again.getByText('Edit', { exact: true }).click();
  await again.getByLabel('Pin lifetime').fill('25 h');
  await again.getByRole('button', { name: 'Save' }).click();
  // Refused: the card comes back open with what was typed, the error at
  // the field in the field's words and units, and nothing saved.
  const refused = page.locator('[data-card="session-affinity"]');
  await expect(refused).toHaveAttribute('open', '');
  await expect(refused.getByLabel('Pin lifetime')).toBeVisible();
  await expect(refused.getByLabel('Pin lifetime')).toHaveValue('25 h');
  await expect(refused.locator('[data-error="sessionAffinityTtlMs"]')).toHaveText('must be between 0 and 1 d');
  await expect(refused.getByRole('alert')).toHaveText('Not saved: correct the marked fields and save again.');
  await expect(page.getByText('sessionAffinityTtlMs')).toHaveCount(0);
  await expect(refused.locator('[data-value="sessionAffinityTtlMs"]')).toHaveText('2 h');

  // Corrected: saved, and the refusal is gone from the page and its address.
  await refused.getByLabel('Pin lifetime').fill('3 h');
  await refused.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/settings\/resilience$/);
  await expect(page.getByRole('alert')).toHaveCount(0);
  await expect(page.locator('[data-card="session-affinity"]')).not.toHaveAttribute('open', '');
  await expect(page.locator('[data-card="session-affinity"] [data-value="sessionAffinityTtlMs"]')).toHaveText('3 h');
});

test('the resilience pages render and their actions post without JavaScript', async ({ page }) => {
  await page.goto('/login');
  await page.getByLabel('Admin password').fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.goto('/monitoring/health');
  const api = await (await page.request.get('/api/monitoring/health')).json();
  await expect(page.getByTestId('health-status')).toHaveText(api.status);
  await page.getByRole('button', { name: 'Reset all' }).click();
  await expect(page).toHaveURL(/\/monitoring\/health/);
  await expect(page.getByTestId('breakers')).toHaveText('Every provider circuit breaker is closed.');
  await page.goto('/monitoring/cooldowns');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Cooldown Manager');
  await expect(page.locator('[data-card="cooldown-rules"]')).toBeVisible();
  await page.goto('/settings/model-lockout');
  await expect(page.getByTestId('model-cooldowns')).toHaveText('No model is locked.');
});

test('combos are created, edited and deleted as plain form posts; a refusal comes back as a banner', async ({ page }) => {
  await page.goto('/login');
  await page.getByLabel('Admin password').fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.goto('/combos');
  const form = page.getByTestId('create-combo');
  // The picker needs JavaScript, so it is not offered; the text is the editor.
  await expect(form.getByTestId('target-picker')).toHaveCount(0);
  await expect(form.locator('textarea[name=targets]')).toBeVisible();
  await form.locator('input[name=name]').fill('nojs-combo');
  await form.locator('select[name=strategy]').selectOption('random');
  await form.locator('textarea[name=targets]').fill('deepseek/deepseek-chat\nmistral/mistral-large-latest 5');
  await form.getByRole('button', { name: 'Create' }).click();
  const row = page.locator('[data-combo="nojs-combo"]');
  await expect(row.getByTestId('strategy')).toHaveText('random');
  // A target that names neither a provider/model nor a combo is refused, nothing saved.
  await form.locator('input[name=name]').fill('nojs-bad');
  await form.locator('textarea[name=targets]').fill('deepseek-chat');
  await form.getByRole('button', { name: 'Create' }).click();
  await expect(page.getByRole('alert')).toContainText('names no provider/model and no combo called');
  await expect(page.locator('[data-combo="nojs-bad"]')).toHaveCount(0);
  await row.getByText('Edit', { exact: true }).click();
  await row.locator('select[name=strategy]').selectOption('least-used');
  await row.getByRole('button', { name: 'Save' }).click();
  await expect(page.locator('[data-combo="nojs-combo"] [data-testid="strategy"]')).toHaveText('least-used');
  await page.locator('[data-combo="nojs-combo"]').getByText('Delete', { exact: true }).click();
  await page.locator('[data-combo="nojs-combo"]').getByRole('button', { name: 'Delete combo' }).click();
  await expect(page.locator('[data-combo="nojs-combo"]')).toHaveCount(0);
});
