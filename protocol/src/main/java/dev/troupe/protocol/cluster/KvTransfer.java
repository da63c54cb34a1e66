package dev.troupe.protocol.cluster;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import dev.troupe.protocol.CborSerializable;
import java.util.List;

/**
 * What a request asks of disaggregated prefill/decode (vLLM's {@code kv_transfer_params}), set by
 * the gateway only ({@link GenerationRequest#kvTransfer()}); null: the replica does both phases.
 */
@JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "kind")
@JsonSubTypes({
  @JsonSubTypes.Type(value = KvTransfer.RemoteDecode.class, name = "remote-decode"),
  @JsonSubTypes.Type(value = KvTransfer.RemotePrefill.class, name = "remote-prefill")
})
public sealed interface KvTransfer extends CborSerializable
    permits KvTransfer.RemoteDecode, KvTransfer.RemotePrefill {

  /**
   * vLLM's {@code do_remote_decode: true}: prefill the prompt, keep the KV blocks covering its
   * positions under a lease for a decode replica to pull, and report where they are ({@link
   * KvHandle} on the last update).
   */
  record RemoteDecode() implements KvTransfer {}

  /**
   * vLLM's {@code do_remote_prefill: true} with the fields the prefill side returned: pull those
   * blocks instead of computing the prompt, then decode.
   *
   * @param remoteEngineId the prefill replica's incarnation (a restarted replica refuses old ids)
   * @param remoteBlockIds the prefill side's block ids covering the prompt's positions, in order
   * @param remoteHost host of the prefill node's KV transfer server
   * @param remotePort port of that server
   * @param remoteRequestId the prefill request's id: the lease the blocks are held under
   * @param tpSize the prefill side's tensor-parallel size (1 here)
   */
  record RemotePrefill(
      String remoteEngineId,
      List<Integer> remoteBlockIds,
      String remoteHost,
      int remotePort,
      String remoteRequestId,
      int tpSize)
      implements KvTransfer {
    public RemotePrefill {
      if (remoteEngineId == null || remoteEngineId.isBlank())
        throw new IllegalArgumentException("remote_engine_id is required");
      if (remoteBlockIds == null)
        throw new IllegalArgumentException("remote_block_ids is required");
      remoteBlockIds = List.copyOf(remoteBlockIds);
      for (Integer id : remoteBlockIds)
        if (id < 0) throw new IllegalArgumentException("remote_block_ids must be >= 0");
      if (remoteHost == null || remoteHost.isBlank())
        throw new IllegalArgumentException("remote_host is required");
      if (remotePort < 1 || remotePort > 65535)
        throw new IllegalArgumentException("remote_port must be in 1..65535");
      if (remoteRequestId == null || remoteRequestId.isBlank())
        throw new IllegalArgumentException("remote_request_id is required");
      if (tpSize < 1) throw new IllegalArgumentException("tp_size must be >= 1");
    }
  }
}
