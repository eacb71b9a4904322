import { test, expect, Locator, Page } from '@playwright/test';
import { FAKE, hydrated, login } from './helpers';

/** The targets as text, unfolded (the rows edit them with JavaScript). */
async function targetsText(form: Locator) {
  const text = form.getByTestId('targets-text');
  if (!(await text.evaluate((d) => (d as HTMLDetailsElement).open))) await text.locator('summary').click();
  return form.getByLabel(/^Targets, in order/);
}

async function addConnection(page: Page, provider: string, name: string, apiKey: string) {
  const resp = await page.request.post('/api/providers', {
    data: { provider, name, apiKey, baseUrl: `${FAKE}/v1` },
  });
  expect(resp.status(), await resp.text()).toBe(201);
}

test('Combos: create with weights (refusing a bad line as typed), route traffic, change the strategy, alias it, delete', async ({
  page,
}) => {
  await login(page);
  await addConnection(page, 'agentrouter', 'agent-main', 'sk-combo-a');
  await addConnection(page, 'opencode-go', 'go-main', 'sk-combo-b');
  await page.goto('/combos');
  await hydrated(page);
  const form = page.getByTestId('create-combo');
  await form.getByLabel('Name (the model clients send)').fill('e2e-split');
  await form.getByLabel('Strategy').selectOption('weighted');
  await expect(form.getByTestId('strategy-explain')).toContainText('drawn by weight');
  const targets = await targetsText(form);
  await targets.fill('agentrouter/fake-a 90\nopencode-go/ 10');
  await expect(form.locator('[data-field-error="targets"]')).toHaveText(
    "line 2: start with provider/model or a combo's name, e.g. openai/gpt-4o 90",
  );
  await expect(targets).toHaveAttribute('aria-invalid', 'true');
  await targets.fill('agentrouter/fake-a 90\nopencode-go/fake-b 10');
  await expect(form.locator('[data-field-error]')).toHaveCount(0);
  await form.getByRole('button', { name: 'Create' }).click();
  const row = page.locator('[data-combo="e2e-split"]');
  await expect(row.getByTestId('strategy')).toHaveText('weighted');
  // Saved, said so, and the form is empty for the next one.
  await expect(page.getByRole('status').filter({ hasText: 'Combo saved.' })).toBeVisible();
  await expect(form.getByLabel('Name (the model clients send)')).toHaveValue('');
  await expect(targets).toHaveValue('');
  await expect(row.getByTestId('targets').locator('li')).toHaveText(['agentrouter/fake-a · weight 90', 'opencode-go/fake-b · weight 10']);
  // Traffic follows the weights: most requests reach the first target's account.
  const key = (await (await page.request.post('/api/keys', { data: { name: `combo-${Date.now()}` } })).json()).key;
  await page.request.delete(`${FAKE}/_control/requests`);
  for (let i = 0; i < 20; i++) {
    const r = await page.request.post('/v1/chat/completions', {
      headers: { Authorization: `Bearer ${key}` },
      data: { model: 'e2e-split', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(r.status(), await r.text()).toBe(200);
  }
  const sent: { headers: Record<string, string> }[] = await (await page.request.get(`${FAKE}/_control/requests`)).json();
  const toFirst = sent.filter((r) => r.headers['authorization'] === 'Bearer sk-combo-a').length;
  expect(toFirst).toBeGreaterThan(12);
  // The row says what its targets are doing now and which served last (it refreshes every 5 s).
  await expect(row.getByTestId('last-served')).toHaveText(/^last served: (agentrouter\/fake-a|opencode-go\/fake-b)$/, {
    timeout: 11_000,
  });
  await expect(row.locator('[data-testid="now"] [data-ready="true"]')).toHaveCount(2);
  // Edit: round-robin alternates.
  await row.getByText('Edit', { exact: true }).click();
  // In a side panel, not a table cell; a save shuts it.
  await expect(row.getByRole('dialog', { name: 'Edit the combo “e2e-split”' })).toBeVisible();
  await row.getByTestId('edit-combo').getByLabel('Strategy').selectOption('round-robin');
  await row.getByRole('button', { name: 'Save' }).click();
  await expect(row.getByTestId('strategy')).toHaveText('round-robin');
  await expect(row.getByTestId('edit')).not.toHaveAttribute('data-open', /.*/);
  await expect(row.getByTestId('edit').locator('form')).toHaveCount(0);
  const saved = await (await page.request.get('/api/combos/e2e-split')).json();
  expect(saved.strategy).toBe('round-robin');
  expect(saved.targets[0]).toEqual({ model: 'agentrouter/fake-a', weight: 90 });
  // A taken name is refused on create, with the field named.
  await form.getByLabel('Name (the model clients send)').fill('e2e-split');
  await (await targetsText(form)).fill('agentrouter/fake-a');
  await form.getByRole('button', { name: 'Create' }).click();
  await expect(page.getByRole('alert')).toContainText('a combo named e2e-split exists');
  // An alias for the combo routes like it; a taken name is refused.
  const alias = page.getByTestId('add-alias');
  await alias.getByLabel('Alias').fill('e2e-split-alias');
  await alias.getByLabel('Stands for (provider/model or combo)').fill('e2e-split');
  await alias.getByRole('button', { name: 'Save alias' }).click();
  await expect(page.locator('[data-alias="e2e-split-alias"]')).toContainText('→ e2e-split');
  const viaAlias = await page.request.post('/v1/chat/completions', {
    headers: { Authorization: `Bearer ${key}` },
    data: { model: 'e2e-split-alias', messages: [{ role: 'user', content: 'hi' }] },
  });
  expect(viaAlias.status()).toBe(200);
  await alias.getByLabel('Alias').fill('openai');
  await alias.getByLabel('Stands for (provider/model or combo)').fill('e2e-split');
  await alias.getByRole('button', { name: 'Save alias' }).click();
  await expect(page.getByRole('alert').filter({ hasText: 'Alias:' })).toContainText('Alias: is already the id of provider');
  // Deleting asks first; each row's button is named by its row.
  const aliasRow = page.locator('[data-alias="e2e-split-alias"]');
  await aliasRow.getByRole('button', { name: 'Delete e2e-split-alias' }).click();
  await expect(aliasRow.getByTestId('confirm')).toContainText('Delete the alias “e2e-split-alias”?');
  await aliasRow.getByRole('button', { name: 'Delete alias' }).click();
  await expect(aliasRow).toHaveCount(0);
  await row.getByRole('button', { name: 'Delete e2e-split', exact: true }).click();
  await row.getByRole('button', { name: 'Delete combo' }).click();
  await expect(row).toHaveCount(0);
  expect((await page.request.get('/api/combos/e2e-split')).status()).toBe(404);
});

test('Combos: a fusion combo with a judge and a pipeline with step prompts, made in the form, answer through their plans', async ({
  page,
}) => {
  await login(page);
  await addConnection(page, 'agentrouter', 'agent-plan', 'sk-plan-a');
  await addConnection(page, 'opencode-go', 'go-plan', 'sk-plan-b');
  await page.goto('/combos');
  await hydrated(page);
  const form = page.getByTestId('create-combo');
  const judge = form.getByLabel(/^Judge/);
  await expect(judge).toBeHidden();
  await form.getByLabel('Name (the model clients send)').fill('e2e-fusion');
  await form.getByLabel('Strategy').selectOption('fusion');
  await expect(form.getByTestId('strategy-explain')).toContainText('judge model');
  await judge.fill('opencode-go/kimi-k2');
  // The pickers write the target lines: a catalog model on one live connection, then another on any.
  const picker = form.getByTestId('target-picker');
  await picker.getByLabel('Pick a model').selectOption('agentrouter/gpt-5');
  await picker.getByLabel('On connection (optional)').selectOption({ label: 'agent-plan (agentrouter)' });
  await picker.getByRole('button', { name: 'Add target' }).click();
  await picker.getByLabel('Pick a model').selectOption('opencode-go/kimi-k2');
  await picker.getByRole('button', { name: 'Add target' }).click();
  await expect(form.getByLabel(/^Targets, in order/)).toHaveValue(/^agentrouter\/gpt-5 @[\w-]+\nopencode-go\/kimi-k2$/);
  await form.getByRole('button', { name: 'Create' }).click();
  const fusion = page.locator('[data-combo="e2e-fusion"]');
  await expect(fusion.getByTestId('settings')).toContainText('judge: opencode-go/kimi-k2');
  // A pinned target names its connection, not the connection's id.
  await expect(fusion.getByTestId('targets').locator('li')).toHaveText(['agentrouter/gpt-5 · on agent-plan', 'opencode-go/kimi-k2']);

  await form.getByLabel('Name (the model clients send)').fill('e2e-chain');
  await form.getByLabel('Strategy').selectOption('pipeline');
  await expect(form.getByLabel(/^Judge/)).toBeHidden();
  // The config fields are checked as typed, by the server's rules.
  const retries = form.getByLabel(/^Step retries/);
  await retries.fill('11');
  await expect(form.locator('[data-field-error="config.maxRetries"]')).toHaveText('must be between 0 and 10');
  await expect(retries).toHaveAttribute('aria-invalid', 'true');
  await retries.fill('2');
  await expect(form.locator('[data-field-error]')).toHaveCount(0);
  await (await targetsText(form)).fill('agentrouter/fake-a | Draft it.\nopencode-go/fake-b | Polish it.');
  // The rows show each step's prompt under a pipeline.
  await expect(form.getByLabel('Prompt of opencode-go/fake-b')).toHaveValue('Polish it.');
  await form.getByRole('button', { name: 'Create' }).click();
  const chain = page.locator('[data-combo="e2e-chain"]');
  await expect(chain.getByTestId('targets').locator('li')).toHaveText([
    'agentrouter/fake-a · step: Draft it.',
    'opencode-go/fake-b · step: Polish it.',
  ]);
  await expect(chain.getByTestId('settings')).toContainText('step retries 2 (2 s apart)');

  const key = (await (await page.request.post('/api/keys', { data: { name: `plan-${Date.now()}` } })).json()).key;
  type Sent = { path: string; body: string };
  for (const [model, calls] of [
    ['e2e-fusion', 3],
    ['e2e-chain', 2],
  ] as const) {
    await page.request.delete(`${FAKE}/_control/requests`);
    const r = await page.request.post('/v1/chat/completions', {
      headers: { Authorization: `Bearer ${key}` },
      data: { model, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(r.status(), await r.text()).toBe(200);
    const sent: Sent[] = await (await page.request.get(`${FAKE}/_control/requests`)).json();
    // The tests run one at a time: every chat call the fake saw since the clear is this request's.
    const chat = sent.filter((s) => s.path.endsWith('/chat/completions'));
    expect(chat.length, `${model}: panel and judge, or one call per step`).toBe(calls);
    const last = JSON.parse(chat[chat.length - 1].body);
    expect(last.model).toBe(model === 'e2e-fusion' ? 'kimi-k2' : 'fake-b');
    expect(JSON.stringify(last.messages)).toContain(model === 'e2e-fusion' ? 'Source 2' : 'Polish it.');
  }
  // A prompt on a combo that is not a pipeline is refused, naming the field.
  await chain.getByText('Edit', { exact: true }).click();
  await chain.getByTestId('edit-combo').getByLabel('Strategy').selectOption('priority');
  await chain.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByRole('alert')).toContainText('targets.0.prompt');
  await expect(chain.getByTestId('strategy')).toHaveText('pipeline');
});

test('the model picker offers what the connections serve, tests included, and strategies come grouped', async ({ page }) => {
  await login(page);
  // A custom upstream's models are known only from its connection's test.
  const resp = await page.request.post('/api/providers', {
    data: { provider: 'openai-compatible', name: 'picker-custom', apiKey: 'sk-picker', baseUrl: `${FAKE}/v1` },
  });
  expect(resp.status(), await resp.text()).toBe(201);
  const id = (await resp.json()).connection.id;
  expect((await page.request.post(`/api/providers/${id}/test`, { data: {} })).status()).toBe(200);
  const key = (await (await page.request.post('/api/keys', { data: { name: `picker-${Date.now()}` } })).json()).key;
  const listed: { id: string; owned_by: string }[] = (
    await (await page.request.get('/v1/models', { headers: { Authorization: `Bearer ${key}` } })).json()
  ).data;
  const served = listed.filter((m) => m.owned_by !== 'combo' && m.owned_by !== 'alias').map((m) => m.id);
  expect(served).toContain('openai-compatible/fake-model-mini');

  await page.goto('/combos');
  await hydrated(page);
  const form = page.getByTestId('create-combo');
  const picker = form.getByTestId('target-picker').getByLabel('Pick a model');
  await expect(picker.locator('optgroup[label="Combos"]')).toBeAttached();
  const offered = await picker.locator('optgroup:not([label="Combos"]) option').evaluateAll((os) =>
    os.map((o) => (o as HTMLOptionElement).value),
  );
  // Exactly what /v1/models lists: no catalog model of a provider without a connection.
  expect(offered.sort()).toEqual([...served].sort());
  await expect(page.getByTestId('known-models')).toContainText('openai-compatible/fake-model-mini');

  const strategy = form.getByLabel('Strategy');
  const groups = await strategy.locator('optgroup').evaluateAll((gs) => gs.map((g) => g.getAttribute('label')));
  expect(groups).toEqual(['Simple order', 'Spread load', 'Use quota well', 'Multi-model']);
  await expect(strategy.locator('option:checked')).toHaveText('priority (recommended)');
  await expect(strategy.locator('option')).toHaveCount(20);

  // Targets are rows: added from the picker, weighed, moved and removed in place; the text follows.
  await expect(form.getByTestId('targets-text')).not.toHaveAttribute('open', /.*/);
  const add = form.getByTestId('target-picker');
  for (const model of ['openai-compatible/fake-model', 'openai-compatible/fake-model-mini', 'openai-compatible/gpt-4o-mini']) {
    await add.getByLabel('Pick a model').selectOption(model);
    await add.getByRole('button', { name: 'Add target' }).click();
  }
  const rows = form.getByTestId('target-rows');
  await expect(rows.locator('tbody tr')).toHaveCount(3);
  await rows.getByLabel('Weight of openai-compatible/fake-model-mini').fill('70');
  await rows.getByLabel('Weight of openai-compatible/fake-model-mini').blur();
  await rows.getByLabel('Connection of openai-compatible/fake-model-mini').selectOption({ label: 'picker-custom (openai-compatible)' });
  await rows.getByRole('button', { name: 'Move openai-compatible/fake-model-mini up' }).click();
  await rows.getByRole('button', { name: 'Remove openai-compatible/gpt-4o-mini' }).click();
  await expect(rows.locator('tbody tr td:first-child')).toHaveText(['openai-compatible/fake-model-mini', 'openai-compatible/fake-model']);
  await expect(form.getByLabel(/^Targets, in order/)).toHaveValue(
    `openai-compatible/fake-model-mini 70 @${id}\nopenai-compatible/fake-model`,
  );
  await expect(rows.getByRole('button', { name: 'Move openai-compatible/fake-model-mini up' })).toBeDisabled();
});
