package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import java.util.List;
import org.junit.jupiter.api.Test;

class TrainingBatchTest {
  @Test
  void dropsZeroAdvantageTrajectoriesButCountsThem() throws Exception {
    var tok = TokenizerBundle.demo().tokenizer();
    TrajectoryTokenizer tt = new TrajectoryTokenizer(tok, new ChatMlTemplate());
    int[] s = tok.encode("x", false);
    String c = TrajectoryTokenizerTest.choice(s, new double[] {-0.3}, "x");
    String traj = "{'reward':%s,'messages_and_choices':[{'role':'user','content':'q'}," + c + "]}";
    JsonNode varied =
        TrajectoryTokenizerTest.json(
            "{'trajectories':[" + traj.formatted(1) + "," + traj.formatted(0) + "]}");
    JsonNode flat =
        TrajectoryTokenizerTest.json(
            "{'trajectories':["
                + traj.formatted(0.5)
                + ","
                + traj.formatted(0.5)
                + ","
                + traj.formatted(0.5)
                + "]}");
    TrainingBatch b = TrainingBatch.build(List.of(varied, flat), tt, true, 0.0, 64);
    assertEquals(1, b.rows().size()); // both trainable histories fit one row
    assertEquals(2, b.rows().get(0).numTrainable());
    assertEquals(2.0, b.metrics().get("num_groups_submitted"));
    assertEquals(1.0, b.metrics().get("num_groups_trainable"));
    assertEquals(5.0, b.metrics().get("num_trajectories"));
    assertEquals((1 + 0 + 1.5) / 5, b.metrics().get("reward"), 1e-12);
    assertEquals((0.5 + 0) / 2, b.metrics().get("reward_std_dev"), 1e-12);
    // normalised: ±1 advantages with weights 1
    assertEquals(2.0, b.metrics().get("num_trainable_tokens"));

    TrainingBatch none = TrainingBatch.build(List.of(flat), tt, true, 0.0, 64);
    assertEquals(0, none.rows().size());
  }
}
