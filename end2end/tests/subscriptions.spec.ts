import { test, expect, Page } from '@playwright/test';
import { FAKE, login, hydrated } from './helpers';

// Signing in with a Claude or ChatGPT subscription from Providers, against
// the fake issuer (OMNIROUTE_OAUTH_TOKEN_URL_CLAUDE and …_CODEX point at
// it): start, open the provider's page (its URL carries the sign-in's
// state), paste the code it shows or the address it ends on; a refused
// code is named at its input; the import form takes Claude Code's and
// Codex's credentials files.

const PAGES = {
  claude: { button: 'Sign in with Claude', url: /^https:\/\/claude\.ai\/oauth\/authorize\?client_id=/ },
  codex: { button: 'Sign in with ChatGPT', url: /^https:\/\/auth\.openai\.com\/oauth\/authorize\?client_id=app_/ },
  'gemini-cli': { button: 'Sign in with Google (Gemini CLI)', url: /^https:\/\/accounts\.google\.com\/o\/oauth2\/v2\/auth\?client_id=681255809395-/ },
};

/** Starts a sign-in (after the one of `previous`, if any); its state, read from the link to the provider's page. */
async function startSignIn(page: Page, previous?: string, provider: keyof typeof PAGES = 'claude'): Promise<string> {
  await page.getByRole('button', { name: PAGES[provider].button }).click();
  const link = page.getByTestId('authorize-url');
  await expect(link).toHaveAttribute('href', PAGES[provider].url);
  if (previous) {
    await expect(link).not.toHaveAttribute('href', new RegExp(`state=${previous}(&|$)`));
  }
  const href = (await link.getAttribute('href')) ?? '';
  expect(href).toContain('code_challenge_method=S256');
  return new URL(href).searchParams.get('state') ?? '';
}

test('sign in with a Claude subscription, a refused code, and an import', async ({ page }) => {
  await login(page);
  await page.goto('/providers');
  await hydrated(page);

  const state = await startSignIn(page);
  const finish = page.getByTestId('finish-sign-in');
  await finish.locator('input[name=code]').fill(`not-a-code#${state}`);
  await finish.getByRole('button', { name: 'Add the account' }).click();
  await expect(finish.locator('[data-field-error=code]')).toContainText('refused the code');

  const again = await startSignIn(page, state);
  await finish.locator('input[name=code]').fill(`fake-code-e2e-js#${again}`);
  await finish.locator('input[name=name]').fill('e2e-claude-signed-in');
  await finish.getByRole('button', { name: 'Add the account' }).click();
  await expect(page.getByTestId('finish-sign-in')).toHaveCount(0);
  await expect(page.locator('tr', { hasText: 'e2e-claude-signed-in' })).toContainText('claude');

  const imported = page.getByTestId('import-subscription');
  await page.getByText('Import the credentials file Claude Code, Codex or the Gemini CLI wrote').click();
  await imported.locator('input[name=name]').fill('e2e-claude-imported');
  await imported.locator('textarea[name=credentials]').fill('{"claudeAiOauth":');
  await imported.getByRole('button', { name: 'Import' }).click();
  await expect(imported.locator('[data-field-error=credentials]')).toContainText("is not the file's JSON");
  const file = { claudeAiOauth: { accessToken: 'sk-ant-oat01-e2e-imported-9911', refreshToken: 'sk-ant-ort01-e2e', expiresAt: Date.now() + 3_600_000 } };
  await imported.locator('textarea[name=credentials]').fill(JSON.stringify(file));
  await imported.getByRole('button', { name: 'Import' }).click();
  await expect(page.locator('tr', { hasText: 'e2e-claude-imported' })).toContainText('…9911');
});

/** An unsigned JWT naming a ChatGPT account, as Codex's issuer makes them. */
function chatgptToken(label: string): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'none' })}.${part({ label, 'https://api.openai.com/auth': { chatgpt_account_id: 'acct-fake-codex' } })}.sig`;
}

test('sign in with a ChatGPT subscription by pasting the address it ends on, and import Codex\'s file', async ({ page }) => {
  await login(page);
  await page.goto('/providers');
  await hydrated(page);

  const state = await startSignIn(page, undefined, 'codex');
  const finish = page.getByTestId('finish-sign-in');
  await expect(finish).toContainText('localhost:1455');
  await finish.locator('input[name=code]').fill(`http://localhost:1455/auth/callback?code=fake-code-e2e-chatgpt&state=${state}`);
  await finish.locator('input[name=name]').fill('e2e-chatgpt-signed-in');
  await finish.getByRole('button', { name: 'Add the account' }).click();
  await expect(page.getByTestId('finish-sign-in')).toHaveCount(0);
  await expect(page.locator('tr', { hasText: 'e2e-chatgpt-signed-in' })).toContainText('codex');

  const imported = page.getByTestId('import-subscription');
  await page.getByText('Import the credentials file Claude Code, Codex or the Gemini CLI wrote').click();
  await imported.locator('select[name=format]').selectOption('codex');
  await imported.locator('input[name=name]').fill('e2e-chatgpt-imported');
  await imported.locator('textarea[name=credentials]').fill(JSON.stringify({ tokens: { access_token: 'opaque' } }));
  await imported.getByRole('button', { name: 'Import' }).click();
  await expect(imported.locator('[data-field-error="credentials.tokens.account_id"]')).toContainText('ChatGPT account');
  const file = { tokens: { access_token: chatgptToken('e2e'), refresh_token: 'rt-e2e', account_id: 'acct-fake-codex' } };
  await imported.locator('textarea[name=credentials]').fill(JSON.stringify(file));
  await imported.getByRole('button', { name: 'Import' }).click();
  await expect(page.locator('tr', { hasText: 'e2e-chatgpt-imported' })).toContainText('codex');
});

test.describe('without JavaScript', () => {
  test.use({ javaScriptEnabled: false });

  test('a sign-in survives the page reload and completes', async ({ page }) => {
    await login(page);
    await page.goto('/providers');
    const state = await startSignIn(page);
    await expect(page).toHaveURL(/\/providers\?sign_in=/);
    const finish = page.getByTestId('finish-sign-in');
    await finish.locator('input[name=code]').fill(`fake-code-e2e-nojs#${state}`);
    await finish.locator('input[name=name]').fill('e2e-claude-nojs');
    await finish.getByRole('button', { name: 'Add the account' }).click();
    await expect(page).toHaveURL(/\/providers$/);
    await expect(page.locator('tr', { hasText: 'e2e-claude-nojs' })).toContainText('claude');
    await expect(page.getByTestId('finish-sign-in')).toHaveCount(0);
  });
});

test('a subscription row shows its plan windows as bars with their renewal', async ({ page }) => {
  await login(page);
  const created = await page.request.post('/api/providers', {
    data: { provider: 'claude', name: 'e2e-claude-bars', authType: 'oauth', accessToken: 'sk-ant-oat01-e2e-bars', expiresAt: Date.now() + 3_600_000, baseUrl: FAKE },
  });
  expect(created.status(), await created.text()).toBe(201);
  // The fake's usage endpoint: 12 % of the 5-hour window (renewing in 2 h), 34 % of the week.
  const read = await page.request.get('/api/quotas?refresh=true');
  expect(read.status()).toBe(200);
  await page.goto('/providers');
  await hydrated(page);
  const row = page.locator('tr', { hasText: 'e2e-claude-bars' });
  await expect(row.locator('[data-window="5h"]')).toContainText(/12 % used · renews in (1h 5\dm|2h 00m)/);
  await expect(row.locator('[data-window="7d"]')).toContainText(/34 % used · renews in (71h 5\dm|72h 00m)/);
  await expect(row.getByRole('img', { name: /^5h window: 12 % used/ })).toBeVisible();
  await expect(row.getByTestId('quota')).toContainText('as of');
});

test("a subscription row is edited with a new access token and its refresh token together", async ({ page }) => {
  await login(page);
  const created = await page.request.post('/api/providers', {
    data: { provider: 'claude', name: 'e2e-claude-edit', authType: 'oauth', accessToken: 'sk-ant-oat01-e2e-first-1111', refreshToken: 'sk-ant-ort01-e2e-first', baseUrl: FAKE },
  });
  expect(created.status(), await created.text()).toBe(201);
  await page.goto('/providers');
  await hydrated(page);
  const row = page.locator('tr', { hasText: 'e2e-claude-edit' });
  await row.getByLabel('Edit e2e-claude-edit').click();
  const edit = row.getByTestId('edit');
  await expect(edit.getByLabel('New API key')).toHaveCount(0);
  // A refresh token alone is refused: it belongs to the access token it came with.
  await edit.getByLabel('Its refresh token').fill('sk-ant-ort01-e2e-second');
  await edit.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByRole('alert')).toContainText('accessToken');
  await edit.getByLabel('New access token').fill('sk-ant-oat01-e2e-second-2222');
  await edit.getByLabel('Its refresh token').fill('sk-ant-ort01-e2e-second');
  await edit.getByRole('button', { name: 'Save' }).click();
  await expect(row).toContainText('…2222');
});

test('a Claude subscription opts into the usage-wall lane and limit reset on its edit form', async ({ page }) => {
  await login(page);
  const created = await page.request.post('/api/providers', {
    data: { provider: 'claude', name: 'e2e-claude-wall', authType: 'oauth', accessToken: 'sk-ant-oat01-e2e-wall', baseUrl: FAKE },
  });
  expect(created.status(), await created.text()).toBe(201);
  const id = (await created.json()).connection.id;
  const stored = async () => {
    const listed = await (await page.request.get('/api/providers')).json();
    return listed.connections.find((c: { id: string }) => c.id === id).providerSpecificData;
  };
  await page.goto('/providers');
  await hydrated(page);
  const row = page.locator('tr', { hasText: 'e2e-claude-wall' });
  await row.getByLabel('Edit e2e-claude-wall').click();
  const edit = row.getByTestId('edit');
  const lane = edit.getByLabel(/Accept the low-priority lane/);
  const reset = edit.getByLabel(/Claim the account's free weekly limit reset/);
  await expect(lane).not.toBeChecked();
  await lane.check();
  await reset.check();
  await edit.getByRole('button', { name: 'Save' }).click();
  await expect.poll(stored).toEqual({ lowPriorityMode: true, autoLimitReset: true });
  await page.reload();
  await hydrated(page);
  await row.getByLabel('Edit e2e-claude-wall').click();
  await expect(lane).toBeChecked();
  await reset.uncheck();
  await edit.getByRole('button', { name: 'Save' }).click();
  await expect.poll(stored).toEqual({ lowPriorityMode: true, autoLimitReset: false });
});

test("sign in with Google for a Gemini CLI account by pasting the code its page shows, and import its file", async ({ page }) => {
  await login(page);
  await page.goto('/providers');
  await hydrated(page);
  await startSignIn(page, undefined, 'gemini-cli');
  const finish = page.getByTestId('finish-sign-in');
  await expect(finish).toContainText("Open Google's sign-in page");
  await finish.locator('input[name=code]').fill('fake-code-e2e-google');
  await finish.locator('input[name=name]').fill('e2e-gemini-signed-in');
  await finish.getByRole('button', { name: 'Add the account' }).click();
  await expect(page.getByTestId('finish-sign-in')).toHaveCount(0);
  await expect(page.locator('tr', { hasText: 'e2e-gemini-signed-in' })).toContainText('gemini-cli');

  const imported = page.getByTestId('import-subscription');
  await page.getByText('Import the credentials file Claude Code, Codex or the Gemini CLI wrote').click();
  await imported.locator('select[name=format]').selectOption('gemini-cli');
  await imported.locator('input[name=name]').fill('e2e-gemini-imported');
  await imported.locator('textarea[name=credentials]').fill(JSON.stringify({ token: 'x' }));
  await imported.getByRole('button', { name: 'Import' }).click();
  await expect(imported.locator('[data-field-error="credentials.access_token"]')).toContainText('is missing');
  const file = { access_token: 'ya29.e2e-imported-7733', refresh_token: '1//e2e', expiry_date: Date.now() + 3_600_000 };
  await imported.locator('textarea[name=credentials]').fill(JSON.stringify(file));
  await imported.getByRole('button', { name: 'Import' }).click();
  await expect(page.locator('tr', { hasText: 'e2e-gemini-imported' })).toContainText('…7733');
});

test('a ChatGPT sign-in from this machine comes back to the dashboard by itself through localhost:1455', async ({ page }) => {
  await login(page);
  await page.goto('/providers');
  await hydrated(page);
  const state = await startSignIn(page, undefined, 'codex');
  const finish = page.getByTestId('finish-sign-in');
  await expect(finish).toContainText('The gateway listens at localhost:1455 on this machine');
  // Where ChatGPT's page sends the browser once the user signed in.
  await page.goto(`http://localhost:1455/auth/callback?code=fake-code-e2e-listener&state=${state}`);
  await expect(page).toHaveURL(/\/providers$/);
  await expect(page.locator('tr', { hasText: 'codex subscription' }).first()).toBeVisible();
});

test("a credentials file on the gateway's machine is offered to this browser and imported in one click", async ({ page }) => {
  await login(page);
  await page.goto('/providers');
  await hydrated(page);
  const local = page.getByTestId('local-credentials');
  await expect(local).toContainText('Found on this machine');
  const offer = local.locator('form', { hasText: "Import the Gemini CLI's ~/.gemini/oauth_creds.json" });
  await offer.getByLabel('Name for ~/.gemini/oauth_creds.json').fill('e2e-gemini-on-disk');
  await offer.getByRole('button', { name: "Import the Gemini CLI's ~/.gemini/oauth_creds.json" }).click();
  await expect(page.locator('tr', { hasText: 'e2e-gemini-on-disk' })).toContainText('…6061');
  await expect(local).not.toContainText("Claude Code's");
});
