package dev.troupe.protocol.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import java.util.List;

/**
 * Which cluster messages travel in Artery's large-message lane, and how large one may be. A
 * generation request carries its prompt (up to a 64 MiB body, a 128k-token prompt's ids), a log
 * request or training job its trajectory groups, and the replies prompt logprobs or pages of
 * groups: all can exceed Artery's ordinary frame (256 KiB), which Artery drops with only a warning.
 * Every path that receives such messages from another node is listed here, on every node (both the
 * sender and the receiver must list a destination). Why a lane and not a larger ordinary frame:
 * docs/architecture.md, "Large messages".
 */
public final class LargeMessages {
  private LargeMessages() {}

  /** The name prefix of a gateway's generation owners, system actors that receive worker events. */
  public static final String GENERATION_OWNER_PREFIX = "generation-";

  /** The largest serialized message of the large lane (Artery's maximum-large-frame-size). */
  public static final String MAXIMUM_LARGE_FRAME_SIZE = "80MiB";

  /** The Artery paths whose messages use the large lane: region, shard and entity of each type. */
  public static final List<String> DESTINATIONS =
      List.of(
          "/system/sharding/" + ModelWorkerProtocol.TYPE_KEY.name(),
          "/system/sharding/" + ModelWorkerProtocol.TYPE_KEY.name() + "/*",
          "/system/sharding/" + ModelWorkerProtocol.TYPE_KEY.name() + "/*/*",
          "/system/" + GENERATION_OWNER_PREFIX + "*/*",
          "/system/sharding/" + TrainingJobProtocol.TYPE_KEY.name(),
          "/system/sharding/" + TrainingJobProtocol.TYPE_KEY.name() + "/*",
          "/system/sharding/" + TrainingJobProtocol.TYPE_KEY.name() + "/*/*",
          "/system/sharding/" + TrajectoryLogProtocol.TYPE_KEY.name(),
          "/system/sharding/" + TrajectoryLogProtocol.TYPE_KEY.name() + "/*",
          "/system/sharding/" + TrajectoryLogProtocol.TYPE_KEY.name() + "/*/*",
          "/system/sharding/" + TrajectoryLogProtocol.TYPE_KEY.name() + "Proxy",
          "/temp/*");

  /**
   * The Artery settings for {@link #DESTINATIONS}, to put in front of a node's config. Set in code,
   * not in reference.conf, where "+=" would depend on the order in which the jars' reference.conf
   * files are merged. Every generation's messages now share the large lane, so its send queue is as
   * long as the ordinary lane's (Artery drops what overflows it; the queue is linked, so it takes
   * memory only while full).
   */
  public static Config config() {
    return ConfigFactory.empty()
        .withValue(
            "pekko.remote.artery.large-message-destinations",
            ConfigValueFactory.fromIterable(DESTINATIONS))
        .withValue(
            "pekko.remote.artery.advanced.maximum-large-frame-size",
            ConfigValueFactory.fromAnyRef(MAXIMUM_LARGE_FRAME_SIZE))
        .withValue(
            "pekko.remote.artery.advanced.outbound-large-message-queue-size",
            ConfigValueFactory.fromAnyRef(3072));
  }
}
