package dev.troupe.registry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ListModels;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelPage;
import dev.troupe.protocol.cluster.TrainableModelProtocol.NameTaken;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Register;
import dev.troupe.protocol.cluster.TrainableModelProtocol.RegisterReply;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Registered;
import dev.troupe.protocol.cluster.TrainableModelProtocol.RegistryCommand;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Unregister;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Unregistered;
import java.nio.file.Path;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** Name uniqueness, listing order and recovery of the model registry. */
class ModelRegistryTest {
  static final ActorTestKit testKit =
      ActorTestKit.create(
          EventSourcedBehaviorTestKit.config()
              .withFallback(ConfigFactory.parseString("pekko.loglevel = WARNING"))
              .withFallback(ConfigFactory.load()));

  @AfterAll
  static void tearDown() {
    testKit.shutdownTestKit();
  }

  @Test
  void namesAreUniqueListedInOrderAndRecovered() {
    var kit =
        EventSourcedBehaviorTestKit
            .<RegistryCommand, ModelRegistry.Event, ModelRegistry.State>create(
                testKit.system(),
                ModelRegistry.create(
                    "registry", PersistenceSettings.h2(Path.of("x")).withSnapshotEvery(2)));
    Registered a =
        (Registered)
            kit.<RegisterReply>runCommand(r -> new Register("id-a", "e", "p", "a", "base", r))
                .reply();
    assertEquals("id-a", a.info().id());
    assertEquals(8, a.info().runId().length());
    kit.<RegisterReply>runCommand(r -> new Register("id-b", "e", "p", "b", "base", r));
    kit.<RegisterReply>runCommand(r -> new Register("id-c", "e", "q", "a", "base", r));
    NameTaken taken =
        (NameTaken)
            kit.<RegisterReply>runCommand(r -> new Register("id-x", "e", "p", "a", "other", r))
                .reply();
    assertEquals(a.info(), taken.existing());

    kit.restart();
    ModelPage first = kit.<ModelPage>runCommand(r -> new ListModels(null, 2, r)).reply();
    assertEquals("id-a", first.data().get(0).id());
    assertEquals("id-b", first.data().get(1).id());
    assertTrue(first.hasMore());
    ModelPage second = kit.<ModelPage>runCommand(r -> new ListModels("id-b", 2, r)).reply();
    assertEquals(1, second.data().size());
    assertFalse(second.hasMore());

    assertTrue(
        kit.<Unregistered>runCommand(r -> new Unregister("id-a", r)).reply().wasRegistered());
    assertFalse(
        kit.<Unregistered>runCommand(r -> new Unregister("id-a", r)).reply().wasRegistered());
    assertInstanceOf(
        Registered.class,
        kit.<RegisterReply>runCommand(r -> new Register("id-d", "e", "p", "a", "base", r)).reply());
  }
}
