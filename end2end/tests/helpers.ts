import { expect, Page } from '@playwright/test';

export const ADMIN_PASSWORD = process.env.ADMIN_PASSWORD ?? '';
export const FAKE = process.env.FAKE_UPSTREAM_URL ?? '';

/** Waits until the WASM bundle has hydrated the page (JS-on tests only). */
export async function hydrated(page: Page) {
  await page.waitForFunction(() => (window as any).__hydrated === true);
}

/** Where sign-in lands: Get started until a connection and a key exist, then Health. */
export const LANDING = /\/(monitoring\/health|get-started)$/;

export async function login(page: Page) {
  await page.goto('/login');
  await page.getByLabel('Admin password').fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(LANDING);
}
