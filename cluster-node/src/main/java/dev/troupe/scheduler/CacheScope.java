package dev.troupe.scheduler;

/**
 * What besides its tokens decides which cached KV blocks a request may share (vLLM's "extra keys"),
 * and whether it reads the cache at all.
 *
 * @param adapter identity of the LoRA adapter (trained checkpoint) the request runs with, or null
 *     for the base model; part of every block's hash, since the adapter changes keys and values. It
 *     must name the weights, not a slot: a reused slot or name with new weights needs a new key
 * @param salt the request's {@code cache_salt}, or null; hashed into the first block only, so it
 *     reaches every later block through the chain: requests share blocks only with the same salt,
 *     and a request without salt never hits a salted entry
 * @param readCache false to compute every token even when cached (vLLM does so for requests with
 *     {@code prompt_logprobs}, which need the logits of every prompt position); the request's
 *     blocks are still published for others
 */
public record CacheScope(String adapter, String salt, boolean readCache) {

  /** The base model, no salt, reading the cache. */
  public static final CacheScope BASE = new CacheScope(null, null, true);

  public CacheScope {
    if (adapter != null && adapter.isEmpty())
      throw new IllegalArgumentException("adapter must be null or non-empty");
    if (salt != null && salt.isEmpty())
      throw new IllegalArgumentException("salt must be null or non-empty");
  }
}
