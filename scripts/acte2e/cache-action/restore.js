// Restore, as actions/cache's main step: the key, else the first
// restore-key prefix that matches; a failing cache service only warns.
const core = require('@actions/core');
const cache = require('@actions/cache');

async function run() {
  const key = core.getInput('key', { required: true });
  const paths = core.getMultilineInput('path', { required: true });
  const restoreKeys = core.getMultilineInput('restore-keys');
  core.saveState('CACHE_KEY', key);
  let hit;
  try {
    hit = await cache.restoreCache(paths, key, restoreKeys);
  } catch (err) {
    core.warning(`cache restore failed: ${err.message}`);
  }
  if (!hit) {
    core.info(`Cache not found for input keys: ${[key, ...restoreKeys].join(', ')}`);
    core.setOutput('cache-hit', 'false');
    return;
  }
  core.saveState('CACHE_RESULT', hit);
  core.setOutput('cache-hit', String(hit === key));
  core.info(`Cache restored from key: ${hit}`);
}

run().catch((err) => core.setFailed(err.message));
