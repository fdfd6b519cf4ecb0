package dev.sluice.postgres;

import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreProtocol;
import dev.sluice.spi.StoreRequest;
import dev.sluice.testkit.GoldenVectorSuite;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicLong;

/** The decide function writes the state core computes, bit for bit, for every golden vector. */
class PostgresGoldenVectorTest extends GoldenVectorSuite {
  private final AtomicLong now = new AtomicLong();
  private final PostgresStore store = PostgresStore.builder(TestPostgres.dataSource())
      .createIfMissing(true).statementTimeout(TestPostgres.SEMANTICS_TIMEOUT)
      .timeSourceMicros(now::get).build();

  @Override
  protected void put(String key, String layout, long[] state) {
    try (Connection c = TestPostgres.dataSource().getConnection()) {
      if (state == null) {
        try (PreparedStatement p = c.prepareStatement("DELETE FROM sluice_buckets WHERE key = ?")) {
          p.setString(1, key);
          p.executeUpdate();
        }
        return;
      }
      Long[] slots = new Long[state.length];
      for (int i = 0; i < state.length; i++) {
        slots[i] = state[i] == StoreRequest.NONE ? StoreProtocol.SCRIPT_NONE : state[i];
      }
      try (PreparedStatement p = c.prepareStatement("INSERT INTO sluice_buckets (key, layout,"
          + " state, expires_at) VALUES (?, ?, ?, now() + interval '1 hour') ON CONFLICT (key)"
          + " DO UPDATE SET layout = excluded.layout, state = excluded.state")) {
        p.setString(1, key);
        p.setString(2, layout);
        p.setArray(3, c.createArrayOf("bigint", slots));
        p.executeUpdate();
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  protected Observation apply(String key, StoreRequest request, long at) {
    now.set(at);
    return store.apply(key, request);
  }

  @Override
  protected long[] get(String key, String layout) {
    try (Connection c = TestPostgres.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement(
            "SELECT state FROM sluice_buckets WHERE key = ? AND layout = ?")) {
      p.setString(1, key);
      p.setString(2, layout);
      try (ResultSet rs = p.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        Array a = rs.getArray(1);
        Long[] values = (Long[]) a.getArray();
        long[] state = new long[values.length];
        for (int i = 0; i < values.length; i++) {
          state[i] = values[i];
        }
        return state;
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  protected void putGroupState(String group, String key, String layout, long[] state) {
    String member = key == null ? "" : key;
    try (Connection c = TestPostgres.dataSource().getConnection()) {
      if (state == null) {
        try (PreparedStatement p = c.prepareStatement(
            "DELETE FROM sluice_buckets_groups WHERE grp = ? AND key = ?")) {
          p.setString(1, group);
          p.setString(2, member);
          p.executeUpdate();
        }
        return;
      }
      Long[] slots = new Long[state.length];
      for (int i = 0; i < state.length; i++) {
        slots[i] = state[i] == StoreRequest.NONE ? StoreProtocol.SCRIPT_NONE : state[i];
      }
      try (PreparedStatement p = c.prepareStatement("INSERT INTO sluice_buckets_groups (grp, key,"
          + " layout, state, expires_at) VALUES (?, ?, ?, ?, now() + interval '1 hour')"
          + " ON CONFLICT (grp, key) DO UPDATE SET layout = excluded.layout, state = excluded.state")) {
        p.setString(1, group);
        p.setString(2, member);
        p.setString(3, layout);
        p.setArray(4, c.createArrayOf("bigint", slots));
        p.executeUpdate();
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  protected long[] getGroupState(String group, String key, String layout) {
    try (Connection c = TestPostgres.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement(
            "SELECT state FROM sluice_buckets_groups WHERE grp = ? AND key = ? AND layout = ?")) {
      p.setString(1, group);
      p.setString(2, key == null ? "" : key);
      p.setString(3, layout);
      try (ResultSet rs = p.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        Long[] values = (Long[]) rs.getArray(1).getArray();
        long[] state = new long[values.length];
        for (int i = 0; i < values.length; i++) {
          state[i] = values[i];
        }
        return state;
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  protected Observation applyGroup(String group, String key, StoreRequest request, long at) {
    now.set(at);
    return store.applyGroup(group, key, request);
  }
}
