// Save, as actions/cache's post step: not when the primary key was
// restored (entries are immutable); paths that do not exist only warn.
const core = require('@actions/core');
const cache = require('@actions/cache');

async function run() {
  const key = core.getState('CACHE_KEY');
  if (!key) {
    core.warning('no key saved by the restore step; not saving');
    return;
  }
  if (core.getState('CACHE_RESULT') === key) {
    core.info(`Cache hit occurred on the primary key ${key}, not saving cache.`);
    return;
  }
  const paths = core.getMultilineInput('path', { required: true });
  try {
    await cache.saveCache(paths, key);
    core.info(`Cache saved with key: ${key}`);
  } catch (err) {
    if (err.name === cache.ValidationError.name) {
      throw err;
    }
    core.warning(err.message);
  }
}

run().catch((err) => core.setFailed(err.message));
