"""The Lua scripts `RedisSession` runs on the server (by `EVALSHA`), one per atomic operation.

Each script is all or nothing: Redis runs it without interleaving another client's
commands. Kept apart from `redis.py` (the session and its key layout); the keys and
arguments each script takes are documented above it.
"""

from __future__ import annotations

# KEYS: the stream, the counter, the ids hash, the summary hash, the sessions index.
# ARGV: n (the number of events), the expected seq ('' for none), the time (ms), the session
# id, the events' format ('*': one per event, after the events), whether ids follow ('1'; '2':
# and after them the stored seqs the client checked), then kind, payload and ts of each event,
# then (if '*') each one's format, then (if '1' or '2') each one's id, then (if '2') one
# argument: the seq each id is stored at, comma separated ('' for one not stored). Three
# arguments per event in the common case, since each one costs the client.
# Returns the first seq written, or -1 when nothing was left to write. Error replies:
# `HELIKON_CONFLICT <last seq>`; `HELIKON_STORED <seqs>` when some ids are stored already (a
# retry) and the client has not checked those events (in that form): it compares their content,
# then calls again with '2' and the seqs, and the script skips them and writes the rest. With
# the expected seq, the retry's own stored events after it are not another writer's.
# Everything that can fail is checked before the first write, and Redis denies an out-of-memory
# script only at its first write, so the script writes all or nothing.
APPEND_SCRIPT = """
local n = tonumber(ARGV[1])
if n == nil or n < 1 then
  return redis.error_reply('ERR helikon append: malformed arguments')
end
local per_event = ARGV[5] == '*'
local chosen = ARGV[6] == '1' or ARGV[6] == '2'
local checked = ARGV[6] == '2'
local versions, ids = 7 + 3 * n, 7 + 3 * n
if per_event then ids = ids + n end
if #ARGV ~= ids - 1 + (chosen and n or 0) + (checked and 1 or 0) then
  return redis.error_reply('ERR helikon append: malformed arguments')
end
local first = tonumber(redis.call('GET', KEYS[2]) or '0')
if first == nil then
  return redis.error_reply('ERR helikon append: the counter ' .. KEYS[2] .. ' is not an integer')
end
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #top > 0 then
  local last = tonumber(string.match(top[1][1], '^(%d+)-'))
  if last >= first then
    return redis.error_reply('ERR helikon append: ' .. KEYS[1] .. ' holds entry ' .. top[1][1]
      .. ' at or past the counter ' .. KEYS[2] .. ' (' .. first .. '): the counter was lost or changed')
  end
end
local skip = nil  -- each event's stored seq ('' if none) when a retry's earlier attempts stored some
local stored = 0
if chosen then
  local seqs = {}
  for i = 0, n - 1 do
    local seq = redis.call('HGET', KEYS[3], ARGV[ids + i])
    if seq then stored = stored + 1 else seq = '' end
    seqs[i + 1] = seq
  end
  if stored > 0 then
    local found = table.concat(seqs, ',')
    if not checked or found ~= ARGV[ids + n] then
      return redis.error_reply('HELIKON_STORED ' .. found)
    end
    skip = seqs
  end
end
if stored == n then return -1 end
if ARGV[2] ~= '' then
  local expected = tonumber(ARGV[2])
  local ours = 0
  if skip then
    for _, seq in ipairs(skip) do
      if seq ~= '' and tonumber(seq) > expected then ours = ours + 1 end
    end
  end
  if first - 1 - expected ~= ours then
    return redis.error_reply('HELIKON_CONFLICT ' .. string.format('%d', first - 1))
  end
end
redis.call('INCRBY', KEYS[2], n - stored)
local next_seq = first
for i = 0, n - 1 do
  if not skip or skip[i + 1] == '' then
    local seq = string.format('%d', next_seq)
    next_seq = next_seq + 1
    local v = ARGV[5]
    if per_event then v = ARGV[versions + i] end
    if chosen then
      local id = ARGV[ids + i]
      redis.call('XADD', KEYS[1], seq .. '-1', 'seq', seq, 'kind', ARGV[7 + 3 * i],
        'payload', ARGV[8 + 3 * i], 'ts', ARGV[9 + 3 * i], 'v', v, 'id', id)
      redis.call('HSET', KEYS[3], id, seq)
    else
      redis.call('XADD', KEYS[1], seq .. '-1', 'seq', seq, 'kind', ARGV[7 + 3 * i],
        'payload', ARGV[8 + 3 * i], 'ts', ARGV[9 + 3 * i], 'v', v)
    end
  end
end
if first == 0 then redis.call('HSETNX', KEYS[4], 'created', ARGV[3]) end
redis.call('ZADD', KEYS[5], ARGV[3], ARGV[4])
return first
"""
"""The Lua script `append` runs (by `EVALSHA`): check ids and expected seq, then one `XADD` per new event."""

# KEYS: the summary hash, the sessions index. ARGV: the time (ms), the session id, whether to
# set the title ('1'), the title, the metadata JSON ('' to leave it), the expected version ('':
# none). A session new to the index enters it with this time; one already there keeps its last
# append's. Each call bumps the hash's `version` (absent: 0), which compare-and-set checks.
METADATA_SCRIPT = """
if ARGV[6] ~= '' then
  local actual = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
  if actual ~= tonumber(ARGV[6]) then
    return redis.error_reply('HELIKON_METADATA_CONFLICT ' .. actual)
  end
end
redis.call('HSETNX', KEYS[1], 'created', ARGV[1])
if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'title', ARGV[4]) end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'metadata', ARGV[5]) end
redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('ZADD', KEYS[2], 'NX', ARGV[1], ARGV[2])
return 1
"""
"""The Lua script `set_metadata` runs: update the summary hash and the sessions index together."""

# KEYS[1] the sessions index. ARGV: the key prefix, the offset, the limit, the filter (a JSON
# object of scalars). Walks the index newest first, on the server, and returns the id and score
# of each session whose metadata holds every filter key with an equal value (cjson's decoding:
# numbers as numbers, `null` as cjson.null), after skipping `offset` of them, up to `limit`.
FILTER_SCRIPT = """
local want = cjson.decode(ARGV[4])
local offset, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local out, skipped, start = {}, 0, 0
while true do
  local page = redis.call('ZREVRANGE', KEYS[1], start, start + 499, 'WITHSCORES')
  if #page == 0 then return out end
  for i = 1, #page, 2 do
    local text = redis.call('HGET', ARGV[1] .. page[i] .. ':meta', 'metadata')
    local ok, meta = false, nil
    if text then ok, meta = pcall(cjson.decode, text) end
    if ok and type(meta) == 'table' then
      for key, value in pairs(want) do
        if meta[key] == nil or meta[key] ~= value then ok = false break end
      end
    else
      ok = false
    end
    if ok then
      if skipped < offset then
        skipped = skipped + 1
      else
        out[#out + 1] = page[i]
        out[#out + 1] = page[i + 1]
        if #out >= 2 * limit then return out end
      end
    end
  end
  start = start + 500
end
"""
"""The Lua script `list_sessions(filter=...)` runs: the matching sessions, read in the server."""

# KEYS[1] the stream; ARGV: the first entry ID, the page size, the byte budget. Returns whether
# more may follow, the last entry ID read, the entries' seqs, payload lengths and format versions
# (comma separated) and their payloads joined by commas: six values a page, however long, so the
# client parses almost nothing (XRANGE's reply is ~10 values per entry). Entries without a
# `seq` or `payload` field (not written by helikon) are skipped.
READ_SCRIPT = """
local entries = redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', tonumber(ARGV[2]))
local budget = tonumber(ARGV[3])
local seqs, lengths, versions, payloads = {}, {}, {}, {}
local last, size, more = '', 0, 0
if #entries == tonumber(ARGV[2]) then more = 1 end
for _, entry in ipairs(entries) do
  local fields = entry[2]
  local seq, payload
  local v = '1'
  for j = 1, #fields, 2 do
    local name = fields[j]
    if name == 'seq' then seq = fields[j + 1]
    elseif name == 'payload' then payload = fields[j + 1]
    elseif name == 'v' then v = fields[j + 1] end
  end
  if seq and payload then
    if size > 0 and size + #payload > budget then
      more = 1
      break
    end
    seqs[#seqs + 1] = seq
    lengths[#lengths + 1] = #payload
    versions[#versions + 1] = v
    payloads[#payloads + 1] = payload
    size = size + #payload
  end
  last = entry[1]
end
return {more, last, table.concat(seqs, ','), table.concat(lengths, ','), table.concat(versions, ','),
  table.concat(payloads, ',')}
"""
"""The read-only Lua script `events()` runs (by `EVALSHA`) for each page of the stream."""

# The payload of the entry holding seq `id` (found by seeking to `<id>-*` and checking the
# `seq` field, which is the truth: the ID is only a way to seek), as a Lua function both
# checkpoint scripts share. A fingerprint is computed here, on the server, with `redis.sha1hex`
# (the same SHA-1 as `helikon.core.session.checkpoint.fingerprint`), so no payload travels for it.
PAYLOAD_AT = """
local function payload_at(stream, id)
  for _, entry in ipairs(redis.call('XRANGE', stream, id, id)) do
    local fields = entry[2]
    local seq, payload
    for j = 1, #fields, 2 do
      if fields[j] == 'seq' then seq = fields[j + 1]
      elseif fields[j] == 'payload' then payload = fields[j + 1] end
    end
    if seq == id and payload then return payload end
  end
  return nil
end
local function well_formed(seq)
  return seq ~= nil and string.match(seq, '^%d+$') ~= nil and #seq < 16
end
"""

# KEYS: the checkpoint hash, the stream. Returns {} when there is no checkpoint, else its
# `as_of_seq`, `projector`, `fingerprint` and `state`, and the fingerprint of the payload the
# stream holds at `as_of_seq` now ('' if none): what `helikon.core.session.checkpoint.load` compares.
CHECKPOINT_READ_SCRIPT = (
    PAYLOAD_AT
    + """
local cp = redis.call('HMGET', KEYS[1], 'as_of_seq', 'projector', 'fingerprint', 'state')
if not cp[1] then return {} end
local found = ''
if well_formed(cp[1]) then
  local payload = payload_at(KEYS[2], cp[1])
  if payload then found = redis.sha1hex(payload) end
end
return {cp[1], cp[2] or '', cp[3] or '', cp[4] or '', found}
"""
)
"""The read-only Lua script a new session object's first `snapshot()` runs for the checkpoint."""

# KEYS: the checkpoint hash, the stream. ARGV: as_of_seq, the projector version, the state,
# whether the reader found the stored checkpoint unusable ('1'), the time (ms). A compare-and-set
# on as_of_seq: the checkpoint only moves forward, unless the stored one is unusable (another
# projector's, malformed, its event gone or changed, or found unusable by the reader), and then
# any good one replaces it. Writes nothing (returns 0) when the stream holds no event at
# as_of_seq, so a checkpoint never runs ahead of its log.
CHECKPOINT_WRITE_SCRIPT = (
    PAYLOAD_AT
    + """
local payload = payload_at(KEYS[2], ARGV[1])
if not payload then return 0 end
local cur = redis.call('HMGET', KEYS[1], 'as_of_seq', 'projector', 'fingerprint')
if cur[1] and ARGV[4] ~= '1' and cur[2] == ARGV[2] and well_formed(cur[1])
    and tonumber(cur[1]) >= tonumber(ARGV[1]) then
  local kept = payload_at(KEYS[2], cur[1])
  if kept and redis.sha1hex(kept) == cur[3] then return 0 end
end
redis.call('HSET', KEYS[1], 'as_of_seq', ARGV[1], 'projector', ARGV[2], 'fingerprint',
  redis.sha1hex(payload), 'state', ARGV[3], 'written', ARGV[5])
return 1
"""
)
"""The Lua script that stores a checkpoint (compare-and-set on `as_of_seq`)."""

__all__ = [
    "APPEND_SCRIPT",
    "CHECKPOINT_READ_SCRIPT",
    "CHECKPOINT_WRITE_SCRIPT",
    "FILTER_SCRIPT",
    "METADATA_SCRIPT",
    "PAYLOAD_AT",
    "READ_SCRIPT",
]
