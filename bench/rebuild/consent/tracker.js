document.body.dataset.tracked = 'yes';
