package dev.troupe.registry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.cluster.TrainableModelProtocol.AddCheckpoint;
import dev.troupe.protocol.cluster.TrainableModelProtocol.CheckpointPage;
import dev.troupe.protocol.cluster.TrainableModelProtocol.CheckpointsDeleteRefused;
import dev.troupe.protocol.cluster.TrainableModelProtocol.CheckpointsDeleted;
import dev.troupe.protocol.cluster.TrainableModelProtocol.CheckpointsNotFound;
import dev.troupe.protocol.cluster.TrainableModelProtocol.CheckpointsReply;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Command;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Create;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Delete;
import dev.troupe.protocol.cluster.TrainableModelProtocol.DeleteCheckpoints;
import dev.troupe.protocol.cluster.TrainableModelProtocol.DeleteCheckpointsReply;
import dev.troupe.protocol.cluster.TrainableModelProtocol.DeleteReply;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Get;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ListCheckpoints;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelDeleted;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelFound;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelInfo;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelNotFound;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelRejected;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelReply;
import dev.troupe.protocol.cluster.TrainableModelProtocol.RecordMetrics;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit.CommandResultWithReply;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The TrainableModel entity with the event-sourced testkit (which also checks that every command,
 * event, reply and state survives Jackson CBOR), including recovery from the journal.
 */
class TrainableModelTest {
  static final ActorTestKit testKit =
      ActorTestKit.create(
          EventSourcedBehaviorTestKit.config()
              .withFallback(ConfigFactory.parseString("pekko.loglevel = WARNING"))
              .withFallback(ConfigFactory.load()));
  static final String ID = "0b7e4a2c-3f0e-4d8e-9b57-5d2d6a3c1f00";
  static final ModelInfo INFO = new ModelInfo(ID, "troupe", "p", "n", "base", "run12345", 1L);

  EventSourcedBehaviorTestKit<Command, TrainableModel.Event, TrainableModel.State> kit;

  @BeforeEach
  void setUp() {
    kit =
        EventSourcedBehaviorTestKit.create(
            testKit.system(),
            TrainableModel.create(
                ID, PersistenceSettings.h2(Path.of("unused")).withSnapshotEvery(3)));
  }

  @AfterAll
  static void tearDown() {
    testKit.shutdownTestKit();
  }

  private ModelFound found(
      CommandResultWithReply<Command, TrainableModel.Event, TrainableModel.State, ModelReply> r) {
    return assertInstanceOf(ModelFound.class, r.reply());
  }

  @Test
  void unbornModelsAreNotFound() {
    assertInstanceOf(ModelNotFound.class, kit.<ModelReply>runCommand(Get::new).reply());
    assertInstanceOf(
        CheckpointsNotFound.class,
        kit.<CheckpointsReply>runCommand(r -> new ListCheckpoints(null, 10, false, r)).reply());
    assertTrue(
        kit.<ModelReply>runCommand(r -> new AddCheckpoint(1, Map.of(), "a", r)).reply()
            instanceof ModelNotFound);
  }

  @Test
  void createHasStepZeroAndIsIdempotent() {
    var created = kit.<ModelReply>runCommand(r -> new Create(INFO, r));
    assertEquals(0, found(created).latest().step());
    assertInstanceOf(TrainableModel.ModelCreated.class, created.event());
    var again = kit.<ModelReply>runCommand(r -> new Create(INFO, r));
    assertTrue(again.hasNoEvents());
    assertEquals(found(created).latest().id(), found(again).latest().id());
  }

  @Test
  void checkpointsGrowInOrderAndCarryMetrics() {
    kit.<ModelReply>runCommand(r -> new Create(INFO, r));
    assertEquals(
        1,
        found(kit.runCommand(r -> new AddCheckpoint(1, Map.of("train/loss", 0.5), "/ckpt/1", r)))
            .latest()
            .step());
    // The same step again (a retried trainer message) is acknowledged without a new event.
    var retry = kit.<ModelReply>runCommand(r -> new AddCheckpoint(1, Map.of(), "/ckpt/1", r));
    assertTrue(retry.hasNoEvents());
    assertInstanceOf(
        ModelRejected.class,
        kit.<ModelReply>runCommand(r -> new AddCheckpoint(1, Map.of(), "/other", r)).reply());
    assertInstanceOf(
        ModelRejected.class,
        kit.<ModelReply>runCommand(r -> new AddCheckpoint(0, Map.of(), "/x", r)).reply());
    kit.<ModelReply>runCommand(r -> new AddCheckpoint(3, Map.of(), "/ckpt/3", r));
    kit.<ModelReply>runCommand(r -> new RecordMetrics(1, Map.of("val/reward", 0.75), r));
    assertInstanceOf(
        ModelRejected.class,
        kit.<ModelReply>runCommand(r -> new RecordMetrics(2, Map.of("val/reward", 1.0), r))
            .reply());

    CheckpointPage desc =
        (CheckpointPage)
            kit.<CheckpointsReply>runCommand(r -> new ListCheckpoints(null, 2, true, r)).reply();
    assertEquals(List.of(3L, 1L), desc.data().stream().map(c -> c.step()).toList());
    assertTrue(desc.hasMore());
    CheckpointPage rest =
        (CheckpointPage)
            kit.<CheckpointsReply>runCommand(
                    r -> new ListCheckpoints(desc.data().get(1).id(), 2, true, r))
                .reply();
    assertEquals(List.of(0L), rest.data().stream().map(c -> c.step()).toList());
    assertEquals(Map.of("train/loss", 0.5, "val/reward", 0.75), desc.data().get(1).metrics());

    assertInstanceOf(
        CheckpointsDeleteRefused.class,
        kit.<DeleteCheckpointsReply>runCommand(r -> new DeleteCheckpoints(List.of(1L, 3L), r))
            .reply());
    CheckpointsDeleted deleted =
        (CheckpointsDeleted)
            kit.<DeleteCheckpointsReply>runCommand(
                    r -> new DeleteCheckpoints(List.of(1L, 2L, 1L), r))
                .reply();
    assertEquals(1, deleted.deletedCount());
    assertEquals(List.of(2L), deleted.notFoundSteps());
  }

  @Test
  void stateIsRecoveredFromTheJournalAndSnapshots() {
    kit.<ModelReply>runCommand(r -> new Create(INFO, r));
    for (int step = 1; step <= 7; step++) {
      long s = step;
      kit.<ModelReply>runCommand(
          r -> new AddCheckpoint(s, Map.of("loss", 1.0 / s), "/ckpt/" + s, r));
    }
    kit.<ModelReply>runCommand(r -> new RecordMetrics(7, Map.of("val/reward", 0.5), r));
    TrainableModel.State before = kit.getState();
    kit.restart();
    assertEquals(before, kit.getState());
    ModelFound f = found(kit.runCommand(Get::new));
    assertEquals(7, f.latest().step());
    assertEquals(8, f.checkpointCount());
    assertEquals(0.5, f.latest().metrics().get("val/reward"));
  }

  @Test
  void deletedModelsStayDeletedAcrossRestarts() {
    kit.<ModelReply>runCommand(r -> new Create(INFO, r));
    ModelDeleted d = (ModelDeleted) kit.<DeleteReply>runCommand(Delete::new).reply();
    assertEquals(1, d.deletedCheckpoints());
    kit.restart();
    assertInstanceOf(ModelNotFound.class, kit.<ModelReply>runCommand(Get::new).reply());
    assertInstanceOf(
        ModelRejected.class, kit.<ModelReply>runCommand(r -> new Create(INFO, r)).reply());
  }
}
