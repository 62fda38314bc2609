package com.example.billing.persistence;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.Date;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * JDBC access to the {@code invoices} and {@code invoice_lines} tables.
 *
 * <p>All methods obtain a connection from the data source and close it before returning, except the
 * ones taking a {@link Connection}, which let callers group several calls in one transaction.
 */
public final class InvoiceRepository {

    /** Lifecycle of an invoice. Stored as its name in the {@code status} column. */
    public enum Status {
        DRAFT,
        ISSUED,
        PAID,
        VOID
    }

    /** An invoice header together with its lines. */
    public record Invoice(
            long id,
            String number,
            long customerId,
            Status status,
            LocalDate issueDate,
            LocalDate dueDate,
            String currency,
            List<Line> lines,
            Instant createdAt) {

        public Invoice {
            Objects.requireNonNull(number, "number");
            Objects.requireNonNull(status, "status");
            Objects.requireNonNull(currency, "currency");
            lines = List.copyOf(lines);
        }

        /** Sum of all line amounts. */
        public BigDecimal total() {
            return lines.stream().map(Line::amount).reduce(BigDecimal.ZERO, BigDecimal::add);
        }
    }

    /** One billed item of an invoice. */
    public record Line(String description, BigDecimal quantity, BigDecimal unitPrice) {

        public Line {
            Objects.requireNonNull(description, "description");
            if (quantity.signum() <= 0) {
                throw new IllegalArgumentException("quantity must be positive");
            }
        }

        public BigDecimal amount() {
            return quantity.multiply(unitPrice);
        }
    }

    /** Thrown when the database rejects an operation or cannot be reached. */
    public static final class RepositoryException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public RepositoryException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private static final String SELECT_INVOICE =
            "SELECT id, number, customer_id, status, issue_date, due_date, currency, created_at"
                    + " FROM invoices";
    private static final String SELECT_LINES =
            "SELECT description, quantity, unit_price FROM invoice_lines"
                    + " WHERE invoice_id = ? ORDER BY position";

    private final DataSource dataSource;

    public InvoiceRepository(DataSource dataSource) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    public Optional<Invoice> findById(long id) {
        try (Connection conn = dataSource.getConnection()) {
            return findById(conn, id);
        } catch (SQLException e) {
            throw new RepositoryException("failed to load invoice " + id, e);
        }
    }

    public Optional<Invoice> findById(Connection conn, long id) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(SELECT_INVOICE + " WHERE id = ?")) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                return Optional.of(mapInvoice(conn, rs));
            }
        }
    }

    public Optional<Invoice> findByNumber(String number) {
        try (Connection conn = dataSource.getConnection();
                PreparedStatement ps = conn.prepareStatement(SELECT_INVOICE + " WHERE number = ?")) {
            ps.setString(1, number);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(mapInvoice(conn, rs)) : Optional.empty();
            }
        } catch (SQLException e) {
            throw new RepositoryException("failed to load invoice " + number, e);
        }
    }

    public List<Invoice> listForCustomer(long customerId, int offset, int limit) {
        if (offset < 0 || limit <= 0) {
            throw new IllegalArgumentException("invalid page: offset=" + offset + ", limit=" + limit);
        }
        String sql = SELECT_INVOICE + " WHERE customer_id = ? ORDER BY issue_date DESC, id DESC LIMIT ? OFFSET ?";
        try (Connection conn = dataSource.getConnection();
                PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setLong(1, customerId);
            ps.setInt(2, limit);
            ps.setInt(3, offset);
            List<Invoice> result = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    result.add(mapInvoice(conn, rs));
                }
            }
            return result;
        } catch (SQLException e) {
            throw new RepositoryException("failed to list invoices of customer " + customerId, e);
        }
    }

    public List<Invoice> findOverdue(LocalDate today) {
        String sql = SELECT_INVOICE + " WHERE status = ? AND due_date < ? ORDER BY due_date";
        try (Connection conn = dataSource.getConnection();
                PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setString(1, Status.ISSUED.name());
            ps.setDate(2, Date.valueOf(today));
            List<Invoice> result = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    result.add(mapInvoice(conn, rs));
                }
            }
            return result;
        } catch (SQLException e) {
            throw new RepositoryException("failed to query overdue invoices", e);
        }
    }

    public long insert(Invoice invoice) {
        try (Connection conn = dataSource.getConnection()) {
            boolean autoCommit = conn.getAutoCommit();
            conn.setAutoCommit(false);
            try {
                long id = insert(conn, invoice);
                conn.commit();
                return id;
            } catch (SQLException | RuntimeException e) {
                conn.rollback();
                throw e;
            } finally {
                conn.setAutoCommit(autoCommit);
            }
        } catch (SQLException e) {
            throw new RepositoryException("failed to insert invoice " + invoice.number(), e);
        }
    }

    public long insert(Connection conn, Invoice invoice) throws SQLException {
        String sql = "INSERT INTO invoices (number, customer_id, status, issue_date, due_date, currency)"
                + " VALUES (?, ?, ?, ?, ?, ?)";
        long id;
        try (PreparedStatement ps = conn.prepareStatement(sql, Statement.RETURN_GENERATED_KEYS)) {
            ps.setString(1, invoice.number());
            ps.setLong(2, invoice.customerId());
            ps.setString(3, invoice.status().name());
            setDate(ps, 4, invoice.issueDate());
            setDate(ps, 5, invoice.dueDate());
            ps.setString(6, invoice.currency());
            ps.executeUpdate();
            try (ResultSet keys = ps.getGeneratedKeys()) {
                if (!keys.next()) {
                    throw new SQLException("no generated key returned for invoice " + invoice.number());
                }
                id = keys.getLong(1);
            }
        }
        insertLines(conn, id, invoice.lines());
        return id;
    }

    public boolean updateStatus(long id, Status expected, Status next) {
        String sql = "UPDATE invoices SET status = ? WHERE id = ? AND status = ?";
        try (Connection conn = dataSource.getConnection();
                PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setString(1, next.name());
            ps.setLong(2, id);
            ps.setString(3, expected.name());
            return ps.executeUpdate() == 1;
        } catch (SQLException e) {
            throw new RepositoryException("failed to update status of invoice " + id, e);
        }
    }

    public int deleteDraftsOlderThan(Instant cutoff) {
        String sql = "DELETE FROM invoices WHERE status = ? AND created_at < ?";
        try (Connection conn = dataSource.getConnection();
                PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setString(1, Status.DRAFT.name());
            ps.setTimestamp(2, Timestamp.from(cutoff));
            return ps.executeUpdate();
        } catch (SQLException e) {
            throw new RepositoryException("failed to delete old drafts", e);
        }
    }

    /**
     * Counts the invoices of a customer in each status. Statuses without invoices are reported
     * with a count of zero.
     */
    public Map<Status, Long> countByStatus(long customerId) {
        String sql = "SELECT status, COUNT(*) FROM invoices WHERE customer_id = ? GROUP BY status";
        Map<Status, Long> counts = new EnumMap<>(Status.class);
        for (Status status : Status.values()) {
            counts.put(status, 0L);
        }
        try (Connection conn = dataSource.getConnection();
                PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setLong(1, customerId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    counts.put(Status.valueOf(rs.getString(1)), rs.getLong(2));
                }
            }
            return counts;
        } catch (SQLException e) {
            throw new RepositoryException("failed to count invoices of customer " + customerId, e);
        }
    }

    /** Total amount of the customer's issued but unpaid invoices, in the given currency. */
    public BigDecimal outstandingTotal(long customerId, String currency) {
        String sql = "SELECT COALESCE(SUM(l.quantity * l.unit_price), 0)"
                + " FROM invoices i JOIN invoice_lines l ON l.invoice_id = i.id"
                + " WHERE i.customer_id = ? AND i.status = ? AND i.currency = ?";
        try (Connection conn = dataSource.getConnection();
                PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setLong(1, customerId);
            ps.setString(2, Status.ISSUED.name());
            ps.setString(3, currency);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBigDecimal(1);
            }
        } catch (SQLException e) {
            throw new RepositoryException("failed to compute outstanding total of customer " + customerId, e);
        }
    }

    private void insertLines(Connection conn, long invoiceId, List<Line> lines) throws SQLException {
        if (lines.isEmpty()) {
            return;
        }
        String sql = "INSERT INTO invoice_lines (invoice_id, position, description, quantity, unit_price)"
                + " VALUES (?, ?, ?, ?, ?)";
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            int position = 0;
            for (Line line : lines) {
                ps.setLong(1, invoiceId);
                ps.setInt(2, position++);
                ps.setString(3, line.description());
                ps.setBigDecimal(4, line.quantity());
                ps.setBigDecimal(5, line.unitPrice());
                ps.addBatch();
            }
            ps.executeBatch();
        }
    }

    private Invoice mapInvoice(Connection conn, ResultSet rs) throws SQLException {
        long id = rs.getLong("id");
        Timestamp createdAt = rs.getTimestamp("created_at");
        return new Invoice(
                id,
                rs.getString("number"),
                rs.getLong("customer_id"),
                Status.valueOf(rs.getString("status")),
                toLocalDate(rs.getDate("issue_date")),
                toLocalDate(rs.getDate("due_date")),
                rs.getString("currency"),
                loadLines(conn, id),
                createdAt == null ? null : createdAt.toInstant());
    }

    private List<Line> loadLines(Connection conn, long invoiceId) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(SELECT_LINES)) {
            ps.setLong(1, invoiceId);
            try (ResultSet rs = ps.executeQuery()) {
                List<Line> lines = new ArrayList<>();
                while (rs.next()) {
                    lines.add(new Line(
                            rs.getString("description"),
                            rs.getBigDecimal("quantity"),
                            rs.getBigDecimal("unit_price")));
                }
                return lines.isEmpty() ? Collections.emptyList() : lines;
            }
        }
    }

    private static void setDate(PreparedStatement ps, int index, LocalDate date) throws SQLException {
        if (date == null) {
            ps.setNull(index, Types.DATE);
        } else {
            ps.setDate(index, Date.valueOf(date));
        }
    }

    private static LocalDate toLocalDate(Date date) {
        return date == null ? null : date.toLocalDate();
    }
}
