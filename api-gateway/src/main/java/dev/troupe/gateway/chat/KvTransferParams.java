package dev.troupe.gateway.chat;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.protocol.cluster.KvTransfer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * {@code kv_transfer_params}: vLLM's hand-off between a prefill and a decode instance
 * (disaggregated serving, NixlConnector's fields). {@code do_remote_decode} truthy (as Python reads
 * it) asks this replica to prefill the prompt and hold its KV blocks for a decode instance ({@link
 * KvTransfer.RemoteDecode}; the proxy's {@code remote_*: null} are ignored); {@code
 * do_remote_prefill} truthy with the fields a prefill response returned asks it to pull those
 * blocks and decode ({@link KvTransfer.RemotePrefill}). With neither, the object has no effect (as
 * on a vLLM server), and the request is served whole.
 */
public final class KvTransferParams {
  private KvTransferParams() {}

  /**
   * What the request asks of P/D, or null for nothing.
   *
   * @param stream the client streams the answer: then {@code do_remote_decode} is refused, because
   *     only a non-streaming answer carries the handle, and blocks leased for a handle nobody can
   *     read would stay pinned for the whole lease
   * @throws ApiException 400 naming {@code kv_transfer_params.<field>} for a bad value
   */
  public static KvTransfer parse(Map<String, Object> params, boolean stream) {
    if (params == null) return null;
    boolean decode = truthy(params.get("do_remote_decode"));
    boolean prefill = truthy(params.get("do_remote_prefill"));
    if (decode && prefill)
      throw bad(
          "do_remote_prefill and do_remote_decode cannot both be true: a request is either the"
              + " prefill half or the decode half of a transfer.",
          "do_remote_prefill");
    if (decode && stream)
      throw bad(
          "a prefill half answers with the kv_transfer_params a decode half needs, which only a"
              + " non-streaming response carries: send it with stream: false (as vLLM's proxy"
              + " does).",
          "do_remote_decode");
    if (decode) return new KvTransfer.RemoteDecode();
    if (!prefill) return null;
    String engine = text(params, "remote_engine_id");
    List<Integer> blocks = blockIds(params.get("remote_block_ids"));
    String host = text(params, "remote_host");
    int port = integer(params, "remote_port", null);
    if (port < 1 || port > 65535) throw bad("must be a port number (1..65535)", "remote_port");
    String requestId = text(params, "remote_request_id");
    int tpSize = integer(params, "tp_size", 1);
    if (tpSize < 1) throw bad("must be >= 1", "tp_size");
    return new KvTransfer.RemotePrefill(engine, blocks, host, port, requestId, tpSize);
  }

  private static String text(Map<String, Object> params, String key) {
    Object v = params.get(key);
    if (!(v instanceof String s) || s.isBlank())
      throw bad("is required with do_remote_prefill (a non-empty string)", key);
    return s;
  }

  private static int integer(Map<String, Object> params, String key, Integer absent) {
    Object v = params.get(key);
    if (v == null && absent != null) return absent;
    if (!(v instanceof Number n) || n.doubleValue() != Math.rint(n.doubleValue()))
      throw bad(
          v == null ? "is required with do_remote_prefill (an integer)" : "must be an integer",
          key);
    if (Math.abs(n.doubleValue()) > Integer.MAX_VALUE) throw bad("is out of range", key);
    return n.intValue();
  }

  private static List<Integer> blockIds(Object v) {
    if (!(v instanceof List<?> list))
      throw bad(
          "is required with do_remote_prefill (the block ids the prefill response returned)",
          "remote_block_ids");
    List<Integer> ids = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      Object id = list.get(i);
      if (!(id instanceof Number n)
          || n.doubleValue() != Math.rint(n.doubleValue())
          || n.doubleValue() < 0
          || n.doubleValue() > Integer.MAX_VALUE)
        throw bad("must be a non-negative integer", "remote_block_ids[" + i + "]");
      ids.add(n.intValue());
    }
    return ids;
  }

  private static ApiException bad(String message, String field) {
    String param = "kv_transfer_params." + field;
    return ApiException.badRequest(param + " " + message, param);
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
