import { test, expect } from '@playwright/test';
import { FAKE, hydrated, login } from './helpers';

test('API keys: create one with scopes and allowed connections, see them listed, revoke it after confirming', async ({
  page,
}) => {
  await login(page);
  const added = await page.request.post('/api/providers', {
    data: { provider: 'lmstudio', name: 'keys-lmstudio', apiKey: 'sk-keys-page', baseUrl: `${FAKE}/v1` },
  });
  expect(added.status(), await added.text()).toBe(201);
  await page.goto('/keys');
  await hydrated(page);
  const form = page.getByTestId('create-key');
  await form.locator('input[name=name]').fill('e2e-lease-agent');
  // A lease key without connections is refused with the field named.
  await form.getByLabel(/lease:exclusive/).check();
  await form.getByRole('button', { name: 'Create' }).click();
  await expect(page.getByRole('alert')).toContainText('must name the connections');
  await form.getByTestId('allowed-connections').getByLabel('keys-lmstudio (lmstudio)').check();
  await form.getByRole('button', { name: 'Create' }).click();
  await expect(page.getByTestId('new-key')).toContainText('omr-');
  // The form is as it first was: a second click does not mint another lease key.
  await expect(form.locator('input[name=name]')).toHaveValue('');
  await expect(form.getByLabel(/lease:exclusive/)).not.toBeChecked();
  await expect(form.getByLabel(/^inference/)).toBeChecked();
  await expect(form.getByTestId('allowed-connections').getByLabel('keys-lmstudio (lmstudio)')).not.toBeChecked();
  const row = page.locator('tr', { hasText: 'e2e-lease-agent' });
  await expect(row.locator('[data-scopes]')).toHaveText('inference, lease:exclusive');
  await expect(row.locator('[data-allowed]')).toHaveText('keys-lmstudio');
  await expect(row.locator('[data-last-used]')).toHaveText('never');

  // Revoke asks first, in a modal dialog; Escape and Cancel leave the key.
  const modal = page.locator('dialog:modal');
  await row.getByText('Revoke', { exact: true }).click();
  await expect(modal).toHaveCount(1);
  await expect(modal).toBeVisible();
  await expect(modal).toContainText('Clients using it are refused');
  // Centred in the viewport, the focus on Cancel; Escape gives it back.
  const box = (await modal.boundingBox())!;
  const viewport = page.viewportSize()!;
  expect(Math.abs(box.x + box.width / 2 - viewport.width / 2)).toBeLessThan(2);
  expect(Math.abs(box.y + box.height / 2 - viewport.height / 2)).toBeLessThan(2);
  await expect(modal.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(modal).toHaveCount(0);
  await expect(row.getByText('Revoke', { exact: true })).toBeFocused();
  await row.getByText('Revoke', { exact: true }).click();
  await modal.getByRole('button', { name: 'Cancel' }).click();
  await expect(modal).toHaveCount(0);
  await expect(row).toHaveCount(1);
  // Only the confirmation revokes.
  await row.getByText('Revoke', { exact: true }).click();
  await expect(row.getByTestId('confirm')).toContainText('Clients using it are refused');
  await modal.getByRole('button', { name: 'Revoke key' }).click();
  await expect(page.locator('tr', { hasText: 'e2e-lease-agent' })).toHaveCount(0);
  await expect(page.getByRole('status').filter({ hasText: 'Key revoked.' })).toBeVisible();
});
