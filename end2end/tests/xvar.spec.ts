import { test } from '@playwright/test';
import { FAKE, login } from './helpers';

async function finishedParsing(browser: any, html: string) {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const p = await context.newPage();
  await p.route('**/variant', (r: any) => r.fulfill({ status: 200, contentType: 'text/html', body: html }));
  await browser.startTracing(p, { categories: ['blink', 'devtools.timeline'] });
  await p.goto('/variant');
  await p.waitForLoadState('load');
  const buf = await browser.stopTracing();
  await context.close();
  const ev = JSON.parse(buf.toString()).traceEvents;
  const fp = ev.filter((e: any) => e.name === 'Document::FinishedParsing' && e.dur).map((e: any) => e.dur / 1000);
  const lay = ev.filter((e: any) => e.name === 'LocalFrameView::performLayout' && e.dur).map((e: any) => e.dur / 1000);
  return `finishedParsing ${Math.round(Math.max(0, ...fp))} ms, layouts ${lay.length} total ${Math.round(lay.reduce((a: number, b: number) => a + b, 0))} ms`;
}

test('variants', async ({ browser, page }) => {
  await login(page);
  for (let i = 0; i < 15; i++) {
    await page.request.post('/api/providers', { data: { provider: 'openai', name: `var-${i}`, apiKey: `sk-var-${i}`, baseUrl: `${FAKE}/v1` } });
  }
  const html = await (await page.request.get('/providers')).text();
  const noEdit = html.replace(/<details data-testid="edit"[\s\S]*?<\/details>/g, '');
  const noVisible = noEdit.replace(/<input(?![^>]*type="hidden")[^>]*>/g, '');
  console.log('forms', (html.match(/<form/g) ?? []).length, (noEdit.match(/<form/g) ?? []).length);
  for (let i = 0; i < 3; i++) {
    console.log('as is      ', await finishedParsing(browser, html));
    console.log('no edit    ', await finishedParsing(browser, noEdit));
    console.log('only hidden', await finishedParsing(browser, noVisible));
  }
});
