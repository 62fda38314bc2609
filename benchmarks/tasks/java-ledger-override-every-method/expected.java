package com.example.ledger;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Clock;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/** A double-entry ledger: every posting moves an amount from one account to another. */
interface Ledger {
    String openAccount(String name, String currency);

    void closeAccount(String accountId);

    Posting post(String from, String to, BigDecimal amount, String memo);

    Posting reverse(String postingId, String reason);

    BigDecimal balance(String accountId);

    BigDecimal balanceAt(String accountId, Instant at);

    List<Posting> postings(String accountId, LocalDate from, LocalDate to);

    Map<String, BigDecimal> trialBalance();

    Optional<Posting> find(String postingId);

    int accountCount();
}

/** One movement of money between two accounts; immutable once written. */
record Posting(String id, String from, String to, BigDecimal amount, String memo, Instant at, String reverses) {
    Posting {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(amount, "amount");
        if (amount.signum() <= 0) {
            throw new IllegalArgumentException("a posting moves a positive amount, not " + amount);
        }
    }

    boolean isReversal() {
        return reverses != null;
    }
}

class LedgerException extends RuntimeException {
    LedgerException(String message) {
        super(message);
    }
}

/**
 * The ledger in memory, safe to share between threads: reads take a shared lock, postings an
 * exclusive one, so a balance never sees half a posting. Amounts are kept at the currency's scale
 * (two decimals), rounded half-even as the accountants asked.
 */
public class LedgerService implements Ledger {
    private static final int SCALE = 2;
    private static final BigDecimal MAX_POSTING = new BigDecimal("1000000000.00");

    private final Map<String, Account> accounts = new LinkedHashMap<>();
    private final List<Posting> journal = new ArrayList<>();
    private final Map<String, Posting> byId = new HashMap<>();
    private final Map<String, String> reversedBy = new HashMap<>();
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final Clock clock;

    private static final class Account {
        final String id;
        final String name;
        final String currency;
        BigDecimal balance = BigDecimal.ZERO.setScale(SCALE);
        boolean closed;

        Account(String id, String name, String currency) {
            this.id = id;
            this.name = name;
            this.currency = currency;
        }
    }

    public LedgerService() {
        this(Clock.systemUTC());
    }

    public LedgerService(Clock clock) {
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    @Override
    public String openAccount(String name, String currency) {
        if (name == null || name.isBlank()) {
            throw new LedgerException("an account needs a name");
        }
        if (currency == null || !currency.matches("[A-Z]{3}")) {
            throw new LedgerException("a currency is a three-letter ISO code, not " + currency);
        }
        lock.writeLock().lock();
        try {
            for (Account account : accounts.values()) {
                if (!account.closed && account.name.equalsIgnoreCase(name.strip())) {
                    throw new LedgerException("an open account is already called " + account.name);
                }
            }
            String id = "acc_" + UUID.randomUUID().toString().substring(0, 8);
            accounts.put(id, new Account(id, name.strip(), currency));
            return id;
        } finally {
            lock.writeLock().unlock();
        }
    }

    @Override
    public void closeAccount(String accountId) {
        lock.writeLock().lock();
        try {
            Account account = open(accountId);
            if (account.balance.signum() != 0) {
                throw new LedgerException(
                        "account " + account.name + " still holds " + account.balance + " " + account.currency);
            }
            account.closed = true;
        } finally {
            lock.writeLock().unlock();
        }
    }

    @Override
    public Posting post(String from, String to, BigDecimal amount, String memo) {
        BigDecimal scaled = scale(amount);
        if (scaled.compareTo(MAX_POSTING) > 0) {
            throw new LedgerException("a posting of " + scaled + " needs a manual approval");
        }
        lock.writeLock().lock();
        try {
            Account source = open(from);
            Account target = open(to);
            if (source == target) {
                throw new LedgerException("a posting needs two different accounts");
            }
            if (!source.currency.equals(target.currency)) {
                throw new LedgerException(
                        "cannot post between " + source.currency + " and " + target.currency + "; convert first");
            }
            return write(source, target, scaled, memo, null);
        } finally {
            lock.writeLock().unlock();
        }
    }

    @Override
    public Posting reverse(String postingId, String reason) {
        lock.writeLock().lock();
        try {
            Posting original = byId.get(postingId);
            if (original == null) {
                throw new LedgerException("no posting " + postingId);
            }
            if (original.isReversal()) {
                throw new LedgerException("posting " + postingId + " is itself a reversal; post it again instead");
            }
            String already = reversedBy.get(postingId);
            if (already != null) {
                throw new LedgerException("posting " + postingId + " was already reversed by " + already);
            }
            // A reversal is a new posting the other way, never an edit: the journal only grows.
            Posting reversal = write(open(original.to()), open(original.from()), original.amount(),
                    "reversal of " + postingId + (reason == null || reason.isBlank() ? "" : ": " + reason), postingId);
            reversedBy.put(postingId, reversal.id());
            return reversal;
        } finally {
            lock.writeLock().unlock();
        }
    }

    @Override
    public BigDecimal balance(String accountId) {
        lock.readLock().lock();
        try {
            return account(accountId).balance;
        } finally {
            lock.readLock().unlock();
        }
    }

    @Override
    public BigDecimal balanceAt(String accountId, Instant at) {
        lock.readLock().lock();
        try {
            account(accountId);
            BigDecimal balance = BigDecimal.ZERO.setScale(SCALE);
            for (Posting posting : journal) {
                if (posting.at().isAfter(at)) {
                    break; // the journal is in time order
                }
                if (posting.to().equals(accountId)) {
                    balance = balance.add(posting.amount());
                } else if (posting.from().equals(accountId)) {
                    balance = balance.subtract(posting.amount());
                }
            }
            return balance;
        } finally {
            lock.readLock().unlock();
        }
    }

    @Override
    public List<Posting> postings(String accountId, LocalDate from, LocalDate to) {
        if (from.isAfter(to)) {
            throw new LedgerException("the period ends before it starts: " + from + " to " + to);
        }
        Instant start = from.atStartOfDay(ZoneOffset.UTC).toInstant();
        Instant end = to.plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant();
        lock.readLock().lock();
        try {
            account(accountId);
            List<Posting> found = new ArrayList<>();
            for (Posting posting : journal) {
                boolean touches = posting.from().equals(accountId) || posting.to().equals(accountId);
                if (touches && !posting.at().isBefore(start) && posting.at().isBefore(end)) {
                    found.add(posting);
                }
            }
            return Collections.unmodifiableList(found);
        } finally {
            lock.readLock().unlock();
        }
    }

    @Override
    public Map<String, BigDecimal> trialBalance() {
        lock.readLock().lock();
        try {
            Map<String, BigDecimal> totals = new LinkedHashMap<>();
            BigDecimal sum = BigDecimal.ZERO.setScale(SCALE);
            List<Account> ordered = new ArrayList<>(accounts.values());
            ordered.sort(Comparator.comparing((Account account) -> account.currency).thenComparing(account -> account.name));
            for (Account account : ordered) {
                totals.put(account.name + " (" + account.currency + ")", account.balance);
                sum = sum.add(account.balance);
            }
            // Every posting takes from one account what it gives another: the balances must cancel out.
            if (sum.signum() != 0) {
                throw new IllegalStateException("the ledger does not balance: the accounts sum to " + sum);
            }
            return Collections.unmodifiableMap(totals);
        } finally {
            lock.readLock().unlock();
        }
    }

    @Override
    public Optional<Posting> find(String postingId) {
        lock.readLock().lock();
        try {
            return Optional.ofNullable(byId.get(postingId));
        } finally {
            lock.readLock().unlock();
        }
    }

    @Override
    public int accountCount() {
        lock.readLock().lock();
        try {
            return (int) accounts.values().stream().filter(account -> !account.closed).count();
        } finally {
            lock.readLock().unlock();
        }
    }

    private Posting write(Account source, Account target, BigDecimal amount, String memo, String reverses) {
        Instant now = clock.instant();
        if (!journal.isEmpty() && now.isBefore(journal.get(journal.size() - 1).at())) {
            now = journal.get(journal.size() - 1).at(); // a clock stepping back must not reorder the journal
        }
        Posting posting = new Posting("pst_" + UUID.randomUUID(), source.id, target.id, amount,
                memo == null ? "" : memo.strip(), now, reverses);
        source.balance = source.balance.subtract(amount);
        target.balance = target.balance.add(amount);
        journal.add(posting);
        byId.put(posting.id(), posting);
        return posting;
    }

    private Account account(String accountId) {
        Account account = accounts.get(accountId);
        if (account == null) {
            throw new LedgerException("no account " + accountId);
        }
        return account;
    }

    private Account open(String accountId) {
        Account account = account(accountId);
        if (account.closed) {
            throw new LedgerException("account " + account.name + " is closed");
        }
        return account;
    }

    private static BigDecimal scale(BigDecimal amount) {
        if (amount == null || amount.signum() <= 0) {
            throw new LedgerException("a posting moves a positive amount, not " + amount);
        }
        BigDecimal scaled = amount.setScale(SCALE, RoundingMode.HALF_EVEN);
        if (scaled.signum() == 0) {
            throw new LedgerException(amount + " rounds to nothing at " + SCALE + " decimals");
        }
        return scaled;
    }
}
