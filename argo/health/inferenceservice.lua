-- bundlegate: stricter Argo CD health check for serving.kserve.io/InferenceService.
--
-- Argo runs this with the live object in the global `obj` and expects a table
-- {status = "Healthy"|"Progressing"|"Degraded"|..., message = "..."}.
--
-- What it fixes in the built-in check:
--   * stale status: Healthy is only read from a status whose observedGeneration
--     equals metadata.generation (otherwise Argo shows the OLD spec's health
--     right after a sync);
--   * a False Ready/PredictorReady is not Progressing forever: failure signals
--     (modelStatus, terminal reasons) are Degraded at once, and any other False
--     condition older than GRACE_SECONDS is Degraded;
--   * Healthy also needs, for the predictor, transformer and explainer, the
--     latest created revision to be the ready one and that revision to receive
--     the traffic the spec declares (canaryTrafficPercent, else 100%); the
--     target model to be Loaded; no failed model copies;
--   * a stopped InferenceService (Stopped=True, or the serving.kserve.io/stop
--     annotation) is Suspended, as upstream says; one being deleted is
--     Progressing.
--
-- Sandbox (argo-cd util/lua/lua.go, for argocd-cm overrides without
-- useOpenLibs): gopher-lua (Lua 5.1) with only the base, table and package
-- libraries. There is NO global `os` (Argo's safe os library registers its
-- time() and date() into `table`), only `require("os")` through a preloaded
-- module; there is no string or math library, and no string metatable, so
-- ("x"):sub() fails. Timestamps are therefore compared as strings against a
-- cutoff built with arithmetic: Kubernetes serializes condition times as
-- RFC 3339 UTC ("2026-01-02T03:04:05Z"), which sorts lexicographically.

-- A False condition younger than this is still Progressing (pods starting,
-- nodes scaling up); older, it is Degraded. Keep it above your slowest model
-- load (the bundle's loadTimeSeconds p95 plus startup-probe budget).
local GRACE_SECONDS = 600
-- KServe versions whose controller never writes status.observedGeneration can
-- set this to false; otherwise such objects stay Progressing (we cannot tell a
-- fresh status from a stale one, and "Healthy" must not be a guess).
local REQUIRE_OBSERVED_GENERATION = true

-- Reasons that mean "this will not fix itself": Degraded without waiting.
local TERMINAL_REASONS = {
  BlockedByFailedLoad = true, InvalidSpec = true, RuntimeDisabled = true, NoSupportingRuntime = true,
  RuntimeNotRecognized = true, InvalidPredictorSpec = true, RevisionFailed = true,
  ProgressDeadlineExceeded = true, ContainerMissing = true, ImagePullBackOff = true,
  ErrImagePull = true, CrashLoopBackOff = true,
}

-- lastFailureInfo reasons that describe the spec, not a transient load error.
local SPEC_FAILURES = {
  NoSupportingRuntime = true, RuntimeNotRecognized = true, InvalidPredictorSpec = true, RuntimeDisabled = true,
}

local DIGITS = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}

-- floor(a / b) for b > 0 with operators only (no math library).
local function fdiv(a, b)
  return (a - a % b) / b
end

-- Decimal digits of a whole number, fixed width or not, with operators only
-- (the same digits in gopher-lua, Lua 5.1 and later Luas).
local function pad(n, width)
  local s = ""
  for _ = 1, width do
    s = DIGITS[n % 10 + 1] .. s
    n = fdiv(n, 10)
  end
  return s
end

local function int(n)
  if n < 0 then return "-" .. int(-n) end
  local s = DIGITS[n % 10 + 1]
  n = fdiv(n, 10)
  while n > 0 do
    s = DIGITS[n % 10 + 1] .. s
    n = fdiv(n, 10)
  end
  return s
end

-- Unix seconds -> "YYYY-MM-DDTHH:MM:SSZ" (UTC), days-from-civil inverted.
local function rfc3339(t)
  local days = fdiv(t, 86400)
  local secs = t - days * 86400
  local z = days + 719468
  local era = fdiv(z, 146097)
  local doe = z - era * 146097
  local yoe = fdiv(doe - fdiv(doe, 1460) + fdiv(doe, 36524) - fdiv(doe, 146096), 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + fdiv(yoe, 4) - fdiv(yoe, 100))
  local mp = fdiv(5 * doy + 2, 153)
  local d = doy - fdiv(153 * mp + 2, 5) + 1
  local m = mp + 3
  if mp >= 10 then m = mp - 9 end
  if m <= 2 then y = y + 1 end
  return pad(y, 4) .. "-" .. pad(m, 2) .. "-" .. pad(d, 2) .. "T" ..
    pad(fdiv(secs, 3600), 2) .. ":" .. pad(fdiv(secs % 3600, 60), 2) .. ":" .. pad(secs % 60, 2) .. "Z"
end

-- The clock: Argo's preloaded safe `os` module (there is no global `os`);
-- nil when there is none.
local function clock()
  local ok, lib = pcall(require, "os")
  if ok and type(lib) == "table" and type(lib.time) == "function" then return lib.time end
  return nil
end

-- Conditions older than this string have persisted beyond the grace period;
-- nil when no clock is available.
local function cutoff()
  local time = clock()
  if time == nil then return nil end
  local now = time()
  if type(now) ~= "number" then return nil end
  return rfc3339(now - GRACE_SECONDS)
end

local function older_than(ts, limit)
  return limit ~= nil and type(ts) == "string" and #ts >= 20 and ts < limit
end

local function describe(c)
  local msg = c.type .. " is " .. c.status
  if c.reason ~= nil and c.reason ~= "" then msg = msg .. " (" .. c.reason .. ")" end
  if c.message ~= nil and c.message ~= "" then msg = msg .. ": " .. c.message end
  return msg
end

local function result(status, message)
  return {status = status, message = message}
end

-- The traffic share (percent) the revision receives in a component's
-- status.traffic; nil when KServe reports no traffic (raw deployments).
local function traffic_of(comp, revision)
  if type(comp.traffic) ~= "table" then return nil end
  local sum = 0
  for _, t in ipairs(comp.traffic) do
    local named = t.revisionName == revision or (t.revisionName == nil and t.latestRevision == true)
    if named and type(t.percent) == "number" then sum = sum + t.percent end
  end
  return sum
end

local COMPONENTS = {"predictor", "transformer", "explainer"}

-- Every component's newest revision must be ready and receive the traffic
-- its spec declares; nil when they do, else the Progressing message.
local function components_waiting(comps)
  if comps == nil then return nil end
  for _, name in ipairs(COMPONENTS) do
    local comp = comps[name]
    if comp ~= nil then
      local ready_rev = comp.latestReadyRevision
      if comp.latestCreatedRevision ~= nil and ready_rev ~= comp.latestCreatedRevision then
        return name .. " revision " .. comp.latestCreatedRevision .. " is not ready yet (serving " .. (ready_rev or "nothing") .. ")"
      end
      if ready_rev ~= nil then
        local share = traffic_of(comp, ready_rev)
        local spec = obj.spec ~= nil and obj.spec[name] or nil
        local want = 100
        if spec ~= nil and type(spec.canaryTrafficPercent) == "number" then want = spec.canaryTrafficPercent end
        if share ~= nil and share < want then
          return name .. " revision " .. ready_rev .. " receives " .. tostring(share) .. "% of traffic, the spec declares " .. tostring(want) .. "%"
        end
      end
    end
  end
  return nil
end

local function check()
  local meta = obj.metadata or {}
  if meta.deletionTimestamp ~= nil then
    return result("Progressing", "Pending deletion (deletionTimestamp " .. tostring(meta.deletionTimestamp) .. ")")
  end
  local status = obj.status
  local stop = meta.annotations ~= nil and meta.annotations["serving.kserve.io/stop"] or nil
  local stopped = nil
  if status ~= nil and status.conditions ~= nil then
    for _, c in ipairs(status.conditions) do
      if c.type == "Stopped" then stopped = c end
    end
  end
  if stopped ~= nil and stopped.status == "True" then
    if stop == "false" then
      return result("Progressing", "Restarting: the stop annotation is false but the Stopped condition is still True")
    end
    return result("Suspended", "InferenceService is Stopped")
  end
  if stop == "true" then
    return result("Suspended", "InferenceService is Stopped (serving.kserve.io/stop annotation; the controller has not reported Stopped yet)")
  end
  if status == nil or status.conditions == nil then
    return result("Progressing", "Waiting for the KServe controller to report status")
  end

  local generation = obj.metadata ~= nil and tonumber(obj.metadata.generation) or nil
  local observed = tonumber(status.observedGeneration)
  if generation ~= nil then
    if observed == nil then
      if REQUIRE_OBSERVED_GENERATION then
        return result("Progressing", "Waiting for controller: status has no observedGeneration, so it may describe an older spec (generation " .. int(generation) .. ")")
      end
    elseif observed < generation then
      return result("Progressing", "Waiting for controller: status is for generation " .. int(observed) .. ", spec is generation " .. int(generation))
    end
  end

  -- Model-level failure signals: Degraded at once.
  local ms = status.modelStatus
  local states = ms ~= nil and ms.states or nil
  local failure = ms ~= nil and ms.lastFailureInfo or nil
  local function failure_text()
    if failure == nil then return "" end
    local t = ""
    if failure.reason ~= nil then t = t .. " " .. failure.reason end
    if failure.message ~= nil and failure.message ~= "" then t = t .. ": " .. failure.message end
    return t
  end
  if ms ~= nil and (ms.transitionStatus == "BlockedByFailedLoad" or ms.transitionStatus == "InvalidSpec") then
    return result("Degraded", "Model transition " .. ms.transitionStatus .. failure_text())
  end
  local copies = ms ~= nil and ms.copies or nil
  if copies ~= nil and type(copies.failedCopies) == "number" and copies.failedCopies > 0 then
    return result("Degraded", "Model has " .. tostring(copies.failedCopies) .. " failed copies" .. failure_text())
  end
  if states ~= nil and (states.targetModelState == "FailedToLoad" or states.activeModelState == "FailedToLoad") then
    return result("Degraded", "Model FailedToLoad" .. failure_text())
  end

  local limit = cutoff()
  local waiting = {}
  -- A failure recorded while the new model is not serving yet. Spec problems
  -- will not fix themselves; load failures may be retried, so they get the
  -- grace period (measured from the failure's own time).
  if failure ~= nil and failure.reason ~= nil and ms.transitionStatus ~= "UpToDate"
      and (states == nil or states.targetModelState ~= "Loaded") then
    if SPEC_FAILURES[failure.reason] or older_than(failure.time, limit) then
      return result("Degraded", "Model load failed:" .. failure_text())
    end
    waiting[#waiting + 1] = "Last model load failed (retrying):" .. failure_text()
  end

  local ready, predictor_ready = nil, nil
  for _, c in ipairs(status.conditions) do
    -- Knative marks informational conditions with a severity; they never
    -- gate readiness.
    local informational = c.severity == "Info" or c.severity == "Warning"
    if c.type == "Ready" then ready = c end
    if c.type == "PredictorReady" then predictor_ready = c end
    -- Stopped is True only when stopped (handled above); False is normal.
    if c.status ~= "True" and not informational and c.type ~= "Stopped" then
      if c.status == "False" and c.reason ~= nil and TERMINAL_REASONS[c.reason] then
        return result("Degraded", describe(c))
      end
      if c.status == "False" and older_than(c.lastTransitionTime, limit) then
        return result("Degraded", describe(c) .. " (False since " .. c.lastTransitionTime .. ", longer than " .. int(fdiv(GRACE_SECONDS, 60)) .. "m)")
      end
      waiting[#waiting + 1] = describe(c)
    end
  end
  if #waiting > 0 then
    return result("Progressing", table.concat(waiting, "; "))
  end
  if ready == nil or ready.status ~= "True" then
    return result("Progressing", "Waiting for the Ready condition")
  end
  if predictor_ready ~= nil and predictor_ready.status ~= "True" then
    return result("Progressing", "Waiting for PredictorReady")
  end

  -- Ready can stay True while the OLD revision serves and the new one is not
  -- up: that is a rollout in progress, not health.
  local comps = status.components
  local pred = comps ~= nil and comps.predictor or nil
  local comp_wait = components_waiting(comps)
  if comp_wait ~= nil then
    return result("Progressing", comp_wait)
  end
  if ms ~= nil and ms.transitionStatus ~= nil and ms.transitionStatus ~= "" and ms.transitionStatus ~= "UpToDate" then
    return result("Progressing", "Model transition " .. ms.transitionStatus)
  end
  if states ~= nil then
    local target = states.targetModelState
    if target ~= nil and target ~= "" and target ~= "Loaded" then
      return result("Progressing", "Target model is " .. target)
    end
    if states.activeModelState ~= nil and states.activeModelState ~= "Loaded" then
      return result("Progressing", "Active model is " .. (states.activeModelState == "" and "none" or states.activeModelState))
    end
  end

  local msg = "InferenceService is ready"
  if observed ~= nil then msg = msg .. " at generation " .. int(observed) end
  if pred ~= nil and pred.latestReadyRevision ~= nil then msg = msg .. " (revision " .. pred.latestReadyRevision .. ")" end
  return result("Healthy", msg)
end

return check()
