// The page's hydration, started from <head> (app/src/hydration.rs). The
// preloads of the page's wasm come before this script: the main module
// and its route group's chunks are compiled from them while the page is
// still parsing, the JS glue is imported and the main module instantiated
// at once, and the page hydrates when its document is parsed. The chunks'
// loader takes its modules from `__compiledWasm`.
((js, wasm) => {
  const compiled = new Map();
  const preloads = 'compileStreaming' in WebAssembly ? document.querySelectorAll('link[rel="preload"][type="application/wasm"]') : [];
  for (const link of preloads) {
    const module = WebAssembly.compileStreaming(fetch(link.href));
    module.catch(() => {});
    compiled.set(link.href, module);
  }
  window.__compiledWasm = compiled;
  const mainUrl = new URL(wasm, location.href).href;
  const main = compiled.get(mainUrl);
  compiled.delete(mainUrl);
  const parsed = new Promise((done) => {
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', done, { once: true });
    else done();
  });
  import(js).then(async (glue) => {
    await glue.default({ module_or_path: main ? main.catch(() => wasm) : wasm });
    await parsed;
    glue.hydrate();
  });
})
