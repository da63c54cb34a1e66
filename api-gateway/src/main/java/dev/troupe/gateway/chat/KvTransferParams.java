package dev.troupe.gateway.chat;

import dev.troupe.gateway.http.ApiException;
import java.util.Collection;
import java.util.Map;

/**
 * {@code kv_transfer_params}: vLLM's hand-off between a prefill and a decode instance
 * (disaggregated serving through a KV connector). Troupe has no KV connector yet, so a request that
 * asks for either side of a transfer ({@code do_remote_prefill} or {@code do_remote_decode} truthy,
 * as Python reads them) is refused with a 400 naming the field, rather than silently served whole.
 * Anything else in the object is accepted and, as on a vLLM server without a connector, has no
 * effect: the non-streaming response's {@code kv_transfer_params} is null.
 */
public final class KvTransferParams {
  private KvTransferParams() {}

  /** The two keys that ask for a transfer. */
  static final String[] TRANSFER_KEYS = {"do_remote_prefill", "do_remote_decode"};

  /**
   * @throws ApiException 400 naming {@code kv_transfer_params.<key>} when a transfer is asked for
   */
  public static void check(Map<String, Object> params) {
    if (params == null) return;
    for (String key : TRANSFER_KEYS)
      if (truthy(params.get(key)))
        throw ApiException.badRequest(
            "kv_transfer_params."
                + key
                + " asks for disaggregated prefill/decode, which this server does not run (it has"
                + " no KV connector); send the request without it to have it served whole.",
            "kv_transfer_params." + key);
  }

  /** Python's truth value of a JSON value. */
  private static boolean truthy(Object v) {
    if (v == null) return false;
    if (v instanceof Boolean b) return b;
    if (v instanceof Number n) return n.doubleValue() != 0;
    if (v instanceof String s) return !s.isEmpty();
    if (v instanceof Collection<?> c) return !c.isEmpty();
    if (v instanceof Map<?, ?> m) return !m.isEmpty();
    return true;
  }
}
