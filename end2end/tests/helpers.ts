import { expect, Locator, Page } from '@playwright/test';

export const ADMIN_PASSWORD = process.env.ADMIN_PASSWORD ?? '';
export const FAKE = process.env.FAKE_UPSTREAM_URL ?? '';

/** Waits until the WASM bundle has hydrated the page (JS-on tests only). */
export async function hydrated(page: Page) {
  await page.waitForFunction(() => (window as any).__hydrated === true);
}

/** Every page of the dashboard behind sign-in, with its heading. */
export const PAGES: [string, string][] = [
  ['/monitoring/health', 'Health'],
  ['/monitoring/cooldowns', 'Cooldown Manager'],
  ['/logs', 'Logs'],
  ['/usage', 'Usage'],
  ['/providers', 'Providers'],
  ['/combos', 'Combos'],
  ['/keys', 'API keys'],
  ['/settings/resilience', 'Settings → Resilience'],
  ['/settings/model-lockout', 'Settings → Model Lockout'],
  ['/get-started', 'Get started'],
];

/** Where sign-in lands: Get started until a connection and a key exist, then Health. */
export const LANDING = /\/(monitoring\/health|get-started)$/;

export async function login(page: Page) {
  await page.goto('/login');
  await page.getByLabel('Admin password').fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(LANDING);
}

/** Unfolds a settings card (when folded) and opens its form (Edit). */
export async function editCard(card: Locator) {
  if (!(await card.evaluate((d) => (d as HTMLDetailsElement).open))) await card.locator('summary').first().click();
  await card.getByText('Edit', { exact: true }).click();
}
