// Preloaded (node --require) into a spec sample's process: the samples
// name http://localhost:50051 verbatim, and the test cluster listens on
// ports of its own, so the sample's fetches to that address go to
// $SEPP_SAMPLE_TARGET instead. Nothing else of the sample changes.
"use strict";
const target = process.env.SEPP_SAMPLE_TARGET;
if (!target) throw new Error("redirect-fetch: SEPP_SAMPLE_TARGET is not set");
const from = "http://localhost:50051";
const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  return realFetch(url.startsWith(from) ? target + url.slice(from.length) : input, init);
};
