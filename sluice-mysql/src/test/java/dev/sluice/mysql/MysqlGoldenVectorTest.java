package dev.sluice.mysql;

import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreProtocol;
import dev.sluice.spi.StoreRequest;
import dev.sluice.testkit.GoldenVectorSuite;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.StringJoiner;
import java.util.concurrent.atomic.AtomicLong;

/** The decide procedures write the state core computes, bit for bit, for every golden vector. */
class MysqlGoldenVectorTest extends GoldenVectorSuite {
  private final AtomicLong now = new AtomicLong();
  private final MysqlStore store = MysqlStore.builder(TestMysql.dataSource())
      .createIfMissing(true).statementTimeout(TestMysql.SEMANTICS_TIMEOUT)
      .timeSourceMicros(now::get).build();

  private static String slots(long[] state) {
    StringJoiner j = new StringJoiner(",");
    for (long s : state) {
      j.add(Long.toString(s == StoreRequest.NONE ? StoreProtocol.SCRIPT_NONE : s));
    }
    return j.toString();
  }

  private static void update(String sql, String... values) {
    try (Connection c = TestMysql.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement(sql)) {
      for (int i = 0; i < values.length; i++) {
        p.setString(i + 1, values[i]);
      }
      p.executeUpdate();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static long[] query(String sql, String... values) {
    try (Connection c = TestMysql.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement(sql)) {
      for (int i = 0; i < values.length; i++) {
        p.setString(i + 1, values[i]);
      }
      try (ResultSet rs = p.executeQuery()) {
        return rs.next() ? MysqlStore.longs(rs.getString(1)) : null;
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  protected void put(String key, String layout, long[] state) {
    if (state == null) {
      update("DELETE FROM sluice_buckets WHERE k = ?", key);
    } else {
      update("INSERT INTO sluice_buckets (k, layout, state, expires_at) VALUES (?, ?, ?,"
          + " sluice_my1_now() + 3600000000) ON DUPLICATE KEY UPDATE layout = VALUES(layout),"
          + " state = VALUES(state)", key, layout, slots(state));
    }
  }

  @Override
  protected Observation apply(String key, StoreRequest request, long at) {
    now.set(at);
    return store.apply(key, request);
  }

  @Override
  protected long[] get(String key, String layout) {
    return query("SELECT state FROM sluice_buckets WHERE k = ? AND layout = ?", key, layout);
  }

  @Override
  protected void putGroupState(String group, String key, String layout, long[] state) {
    String member = key == null ? "" : key;
    if (state == null) {
      update("DELETE FROM sluice_buckets_groups WHERE grp = ? AND k = ?", group, member);
    } else {
      update("INSERT INTO sluice_buckets_groups (grp, k, layout, state, expires_at) VALUES (?, ?,"
          + " ?, ?, sluice_my1_now() + 3600000000) ON DUPLICATE KEY UPDATE layout ="
          + " VALUES(layout), state = VALUES(state)", group, member, layout, slots(state));
    }
  }

  @Override
  protected long[] getGroupState(String group, String key, String layout) {
    return query("SELECT state FROM sluice_buckets_groups WHERE grp = ? AND k = ? AND layout = ?",
        group, key == null ? "" : key, layout);
  }

  @Override
  protected Observation applyGroup(String group, String key, StoreRequest request, long at) {
    now.set(at);
    return store.applyGroup(group, key, request);
  }
}
