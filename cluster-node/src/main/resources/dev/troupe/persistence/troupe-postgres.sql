-- Trajectory store: one row per logged group, raw JSON bytes. The TrajectoryLog journal holds
-- only the sequence ranges, so a group is read back without replaying events.
CREATE TABLE IF NOT EXISTS troupe_trajectory_group (
  model_id VARCHAR(64) NOT NULL,
  seq BIGINT NOT NULL,
  split VARCHAR(255) NOT NULL,
  step BIGINT NOT NULL,
  logged_at BIGINT NOT NULL,
  payload BYTEA NOT NULL,
  PRIMARY KEY (model_id, seq)
);
CREATE INDEX IF NOT EXISTS troupe_trajectory_group_split_idx
  ON troupe_trajectory_group (model_id, split, seq);
