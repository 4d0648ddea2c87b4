// The console's one general script: a confirmation before a form marked data-confirm is sent
// (suspend, revoke, force-assign). Everything works without it, minus the confirmation.
document.addEventListener('submit', (e) => {
  const form = e.target;
  if (!(form instanceof HTMLFormElement)) return;
  const question = form.dataset.confirm;
  if (question && !window.confirm(question)) e.preventDefault();
});
