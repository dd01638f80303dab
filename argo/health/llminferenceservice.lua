-- bundlegate: stricter Argo CD health check for serving.kserve.io/LLMInferenceService.
--
-- Argo runs this with the live object in the global `obj` and expects a table
-- {status = "Healthy"|"Progressing"|"Degraded"|"Suspended", message = "..."}.
--
-- Read against KServe v0.20 (storage version v1alpha2: status.conditions,
-- status.workloads, status.router) and Argo CD's own check for this kind
-- (argo-cd resource_customizations/serving.kserve.io/LLMInferenceService,
-- PR #29620), which this one replaces through argocd-cm and must never be
-- more lenient than. What it adds:
--   * a status the controller wrote for an older spec is never Healthy: the
--     status-level observedGeneration must equal metadata.generation, and a
--     status without one cannot be shown fresh (Argo's treats it as fresh);
--   * Healthy also needs every other condition True (workloads, router,
--     presets: a dependent still Unknown is a rollout in progress), the
--     RouterReady condition when the spec routes through a gateway, and each
--     workload's readyReplicas (when the controller reports it) to reach the
--     replicas the spec asks for;
--   * a dependent False while Ready still reads True is Degraded;
--   * the stop annotation is authoritative: Stopped reasons while the
--     annotation says "false" are a restart in progress, not Suspended;
--   * an object being deleted is Progressing, never Healthy.
--
-- Sandbox (argo-cd util/lua/lua.go, for argocd-cm overrides without
-- useOpenLibs): gopher-lua (Lua 5.1) with only the base, table and package
-- libraries: no string, math or os library and no string metatable, so only
-- operators, `..` and tostring are used. No clock is needed: KServe reports a
-- rollout in progress as Unknown, and False as soon as it fails.

local function named(c)
  local s = tostring(c.type) .. " is " .. tostring(c.status)
  if c.reason ~= nil and c.reason ~= "" then
    s = s .. " (" .. c.reason .. ")"
  end
  if c.message ~= nil and c.message ~= "" then
    s = s .. ": " .. c.message
  end
  return s
end

local function join(parts)
  local s = ""
  for i, p in ipairs(parts) do
    if i > 1 then
      s = s .. "; "
    end
    s = s .. p
  end
  return s
end

-- "; a; b" for a list that follows a first part ("" when empty).
local function tail(parts)
  if #parts == 0 then
    return ""
  end
  return "; " .. join(parts)
end

local function result(status, message)
  return {status = status, message = message}
end

local function health(o)
  local meta = o.metadata or {}
  if meta.deletionTimestamp ~= nil then
    return result("Progressing", "LLMInferenceService is being deleted (since " .. tostring(meta.deletionTimestamp) .. ")")
  end
  local stop = nil
  if meta.annotations ~= nil then
    stop = meta.annotations["serving.kserve.io/stop"]
  end
  local st = o.status
  if st == nil or st.conditions == nil then
    if stop == "true" then
      return result("Suspended", "LLMInferenceService is Stopped (serving.kserve.io/stop)")
    end
    return result("Progressing", "Waiting for LLMInferenceService to report status")
  end

  local gen = meta.generation
  if st.observedGeneration == nil then
    return result("Progressing", "Waiting for the controller: the status has no observedGeneration, so it cannot be shown to describe generation " .. tostring(gen))
  end
  if gen ~= nil and st.observedGeneration ~= gen then
    return result("Progressing", "Waiting for the controller: the status is for generation " .. tostring(st.observedGeneration) .. ", the spec is generation " .. tostring(gen))
  end

  local ready = nil
  local stopped = false
  local failed = {}
  local waiting = {}
  for _, c in ipairs(st.conditions) do
    if c.reason == "Stopped" then
      stopped = true
    end
    if c.type == "Ready" then
      ready = c
    elseif c.status == "False" then
      failed[#failed + 1] = named(c)
    elseif c.status ~= "True" then
      waiting[#waiting + 1] = named(c)
    end
  end
  -- A condition's own observedGeneration (some controllers write one) must
  -- not lag either.
  if ready ~= nil and gen ~= nil and ready.observedGeneration ~= nil and ready.observedGeneration ~= gen then
    return result("Progressing", "Waiting for the controller: Ready is for generation " .. tostring(ready.observedGeneration) .. ", the spec is generation " .. tostring(gen))
  end

  if stop == "true" then
    return result("Suspended", "LLMInferenceService is Stopped")
  end
  if stopped then
    if stop == nil then
      return result("Suspended", "LLMInferenceService is Stopped")
    end
    return result("Progressing", "Restarting: conditions still say Stopped while serving.kserve.io/stop is " .. tostring(stop))
  end

  if ready == nil then
    return result("Progressing", "Waiting for the Ready condition")
  end
  if ready.status == "False" then
    return result("Degraded", named(ready) .. tail(failed))
  end
  if #failed > 0 then
    return result("Degraded", join(failed))
  end
  if ready.status ~= "True" then
    return result("Progressing", named(ready) .. tail(waiting))
  end
  if #waiting > 0 then
    return result("Progressing", "Ready is True but " .. join(waiting))
  end

  -- Ready and every dependent True: the router and the workloads themselves.
  local spec = o.spec or {}
  if spec.router ~= nil and (spec.router.route ~= nil or spec.router.gateway ~= nil) then
    local routed = false
    for _, c in ipairs(st.conditions) do
      if c.type == "RouterReady" and c.status == "True" then
        routed = true
      end
    end
    if not routed then
      return result("Progressing", "The spec routes through a gateway but RouterReady has not been reported True")
    end
  end
  local w = st.workloads or {}
  local checks = {{"primary", spec.replicas}}
  if spec.prefill ~= nil then
    checks[#checks + 1] = {"prefill", spec.prefill.replicas}
  end
  for _, check in ipairs(checks) do
    local name, want = check[1], check[2]
    local got = w[name]
    if want ~= nil and want > 0 and got ~= nil and got.readyReplicas ~= nil and got.readyReplicas < want then
      return result("Progressing", "Workload " .. name .. " (" .. tostring(got.name) .. "): " .. tostring(got.readyReplicas) .. " of " .. tostring(want) .. " replicas ready")
    end
  end
  if spec.prefill ~= nil and spec.prefill.replicas ~= nil and spec.prefill.replicas > 0 and w.prefill == nil and st.workloads ~= nil then
    return result("Progressing", "The spec has a prefill pool but the status names no prefill workload yet")
  end

  return result("Healthy", "LLMInferenceService is ready for generation " .. tostring(gen))
end

return health(obj)
