import { test, expect, BrowserContext, Page } from '@playwright/test';
import { LANDING, ADMIN_PASSWORD, hydrated, login } from './helpers';

/** Ends the context's session on the server (as a sign-out elsewhere or a
 *  password reset would) but leaves the browser holding its cookie. */
async function endSessionKeepingCookie(context: BrowserContext, page: Page) {
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === 'omniroute_session');
  expect(session, 'signed in').toBeTruthy();
  const resp = await page.request.post('/api/auth/logout', { data: {} });
  expect(resp.status()).toBe(200);
  await context.addCookies([session!]);
}

async function signIn(page: Page) {
  await page.getByLabel('Admin password').fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

test('a page opened without a session returns to itself after sign-in', async ({ page }) => {
  await page.goto('/combos?x=1');
  await expect(page).toHaveURL(/\/login\?next=%2Fcombos%3Fx%3D1$/);
  await hydrated(page);
  await signIn(page);
  await expect(page).toHaveURL(/\/combos\?x=1$/);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Combos');
});

test('an action in an open tab whose session ended goes to sign-in and back (JS on)', async ({ page, context }) => {
  await login(page);
  await page.goto('/keys');
  await hydrated(page);
  await endSessionKeepingCookie(context, page);
  await page.getByTestId('create-key').locator('input[name=name]').fill('after-signout');
  await page.getByRole('button', { name: 'Create' }).click();
  await expect(page).toHaveURL(/\/login\?next=%2Fkeys$/);
  await expect(page.getByText('error deserializing')).toHaveCount(0);
  await hydrated(page);
  await signIn(page);
  await expect(page).toHaveURL(/\/keys$/);
  // Nothing was created while signed out.
  await expect(page.locator('tr', { hasText: 'after-signout' })).toHaveCount(0);
});

test.describe('without JavaScript', () => {
  test.use({ javaScriptEnabled: false });

  test('a form post after the session ended goes to sign-in and back to its page', async ({ page, context }) => {
    await page.goto('/login');
    await signIn(page);
    await expect(page).toHaveURL(LANDING);
    await page.goto('/keys');
    await endSessionKeepingCookie(context, page);
    await page.getByTestId('create-key').locator('input[name=name]').fill('nojs-after-signout');
    await page.getByRole('button', { name: 'Create' }).click();
    await expect(page).toHaveURL(/\/login\?next=%2Fkeys$/);
    await signIn(page);
    await expect(page).toHaveURL(/\/keys$/);
    await expect(page.locator('tr', { hasText: 'nojs-after-signout' })).toHaveCount(0);
  });
});
