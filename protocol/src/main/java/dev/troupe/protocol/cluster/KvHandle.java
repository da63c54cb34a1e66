package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where a {@link KvTransfer.RemoteDecode} request's prompt KV blocks wait for a decode replica:
 * carried on that request's last {@link ModelWorkerProtocol.GenerationUpdate} and returned to the
 * client as {@code kv_transfer_params} (vLLM's NixlConnector shape).
 *
 * @param remoteEngineId the prefill replica's incarnation
 * @param remoteBlockIds the block ids covering the prompt's positions, in order
 * @param remoteHost host of this node's KV transfer server
 * @param remotePort port of that server
 * @param remoteRequestId the lease the blocks are held under (the prefill request's id)
 * @param tpSize tensor-parallel size (1)
 */
public record KvHandle(
    String remoteEngineId,
    List<Integer> remoteBlockIds,
    String remoteHost,
    int remotePort,
    String remoteRequestId,
    int tpSize)
    implements CborSerializable {
  public KvHandle {
    if (remoteEngineId == null || remoteEngineId.isBlank())
      throw new IllegalArgumentException("remoteEngineId is required");
    remoteBlockIds = List.copyOf(remoteBlockIds);
    if (remoteHost == null || remoteHost.isBlank())
      throw new IllegalArgumentException("remoteHost is required");
    if (remoteRequestId == null || remoteRequestId.isBlank())
      throw new IllegalArgumentException("remoteRequestId is required");
  }

  /** The response's {@code kv_transfer_params}, in vLLM's field order. */
  public Map<String, Object> toParams() {
    Map<String, Object> params = new LinkedHashMap<>();
    params.put("do_remote_prefill", true);
    params.put("do_remote_decode", false);
    params.put("remote_engine_id", remoteEngineId);
    params.put("remote_block_ids", remoteBlockIds);
    params.put("remote_host", remoteHost);
    params.put("remote_port", remotePort);
    params.put("remote_request_id", remoteRequestId);
    params.put("tp_size", tpSize);
    return params;
  }

  /** What a decode request carrying these params asks for. */
  public KvTransfer.RemotePrefill toRemotePrefill() {
    return new KvTransfer.RemotePrefill(
        remoteEngineId, remoteBlockIds, remoteHost, remotePort, remoteRequestId, tpSize);
  }
}
