package dev.troupe.testing;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.troupe.persistence.Persistence;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.cluster.LargeMessages;

/** Config of an in-JVM test node with roles gateway and trainer on a random loopback port. */
public final class TestNodeConfig {
  private TestNodeConfig() {}

  /** The node's config on {@code settings}' store, serving {@code baseModel} (the demo model). */
  public static Config gatewayTrainer(PersistenceSettings settings, String baseModel) {
    return Persistence.configFor(settings)
        .withFallback(LargeMessages.config())
        .withFallback(
            ConfigFactory.parseString(
                """
                pekko.actor.provider = cluster
                pekko.remote.artery.canonical.hostname = 127.0.0.1
                pekko.remote.artery.canonical.port = 0
                pekko.cluster.roles = [gateway, trainer]
                pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
                pekko.cluster.downing-provider-class = ""
                pekko.coordinated-shutdown.exit-jvm = off
                pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                pekko.loglevel = WARNING
                pekko.cluster.log-info = off
                troupe.models = [{ name = "%s", path = "demo" }]
                """
                    .formatted(baseModel)))
        .withFallback(ConfigFactory.load());
  }
}
